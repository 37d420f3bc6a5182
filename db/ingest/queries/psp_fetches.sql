-- name: PSPFetchInsert :exec
INSERT INTO ingest.psp_fetches (psp, operation, object_id, outcome, latency_ms)
VALUES (@psp, @operation, @object_id, @outcome, @latency_ms);

-- name: PSPFetchCopy :copyfrom
-- Records calls to PSPs in one COPY, each at the time it was made.
INSERT INTO ingest.psp_fetches (psp, operation, object_id, outcome, latency_ms, fetched_at)
VALUES (@psp, @operation, @object_id, @outcome, @latency_ms, @fetched_at);

-- name: PSPFetchesOfObjects :many
-- The latest calls about any of the objects (payment, refund or order
-- ids), oldest first.
SELECT * FROM (
    SELECT * FROM ingest.psp_fetches WHERE object_id = ANY(@ids::text[])
    ORDER BY id DESC LIMIT 200) f
ORDER BY id;

-- name: PSPFetchPrune :execrows
-- Deletes up to max_rows calls made before the cutoff, lowest id first,
-- below the first call made at or after it (as ReceiptPrune).
DELETE FROM ingest.psp_fetches
WHERE id IN (
    SELECT old.id FROM ingest.psp_fetches old
    WHERE old.fetched_at < @cutoff
      AND old.id < coalesce((SELECT n.id FROM ingest.psp_fetches n WHERE n.fetched_at >= @cutoff
                             ORDER BY n.id LIMIT 1), 9223372036854775807)
    ORDER BY old.id
    LIMIT @max_rows);
