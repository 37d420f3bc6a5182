-- name: IdempotencyBegin :execrows
-- Claims a key for a request; 0 rows means the key is already known. An
-- in-progress claim older than the stale cutoff (its process died) is
-- taken over when the request is the same.
INSERT INTO ingest.idempotency_keys AS k (route, key, request_hash)
VALUES (@route, @key, @request_hash)
ON CONFLICT (route, key) DO UPDATE SET created_at = now()
WHERE k.response_status IS NULL AND k.created_at < @stale_before
  AND k.request_hash = excluded.request_hash;

-- name: IdempotencyGet :one
SELECT * FROM ingest.idempotency_keys WHERE route = @route AND key = @key;

-- name: IdempotencyFinish :exec
-- Keeps the response to replay for the same key and body.
UPDATE ingest.idempotency_keys
SET response_status = @response_status, response_body = @response_body
WHERE route = @route AND key = @key;

-- name: IdempotencyForget :exec
-- Drops a claim whose request failed, so the client may try again.
DELETE FROM ingest.idempotency_keys WHERE route = @route AND key = @key AND response_status IS NULL;

-- name: IdempotencyPrune :execrows
-- Deletes up to max_rows keys created before the cutoff.
DELETE FROM ingest.idempotency_keys
WHERE (route, key) IN (
    SELECT old.route, old.key FROM ingest.idempotency_keys old
    WHERE old.created_at < @cutoff
    LIMIT @max_rows);
