-- name: ReceiptInsert :execrows
-- A duplicate (same source and dedupe key) inserts nothing and returns 0.
INSERT INTO ingest.webhook_receipts (source, dedupe_key, event_id, event_type, body)
VALUES (@source, @dedupe_key, @event_id, @event_type, @body)
ON CONFLICT (source, dedupe_key) DO NOTHING;

-- name: ReceiptClaimDue :many
-- Claims pending receipts that are due and not leased by a live worker.
UPDATE ingest.webhook_receipts r
SET lease_token = @lease_token, lease_expires_at = now() + make_interval(secs => @lease_seconds::float8)
WHERE r.id IN (
    SELECT id FROM ingest.webhook_receipts
    WHERE status = 'pending' AND next_attempt_at <= now()
      AND (lease_expires_at IS NULL OR lease_expires_at < now())
    ORDER BY next_attempt_at, id
    LIMIT @max_rows
    FOR UPDATE SKIP LOCKED)
RETURNING r.id, r.source, r.event_id, r.event_type, r.attempts;

-- name: ReceiptFinish :execrows
-- Ends a receipt as done or rejected; fenced by the claim's lease token.
UPDATE ingest.webhook_receipts
SET status = @status, last_error = @last_error, processed_at = now(),
    lease_token = NULL, lease_expires_at = NULL
WHERE id = @id AND lease_token = @lease_token;

-- name: ReceiptRetryLater :execrows
-- Records a failed attempt: due again at next_attempt_at, or parked.
UPDATE ingest.webhook_receipts
SET attempts = attempts + 1, last_error = @last_error, next_attempt_at = @next_attempt_at,
    status = CASE WHEN @park::bool THEN 'parked' ELSE status END,
    lease_token = NULL, lease_expires_at = NULL
WHERE id = @id AND lease_token = @lease_token;
