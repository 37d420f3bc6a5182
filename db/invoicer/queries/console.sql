-- name: DocumentCountActive :many
-- Documents per status that still has work ahead, counted through the
-- (status, id) index: these are few however many documents there are.
SELECT status, count(*)::bigint AS documents FROM invoicer.fiscal_documents
WHERE status IN ('pending', 'unknown', 'pending_dgi', 'needs_attention')
GROUP BY status;

-- name: DocumentStatusEstimates :one
-- The planner's statistics of the status column: its most common values
-- (as a text array literal), their frequencies, and the table's row
-- estimate; their products estimate the documents per status.
SELECT s.most_common_vals::text AS vals, s.most_common_freqs::float8[] AS freqs, c.reltuples::float8 AS reltuples
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_stats s ON s.schemaname = 'invoicer' AND s.tablename = 'fiscal_documents' AND s.attname = 'status'
WHERE c.oid = 'invoicer.fiscal_documents'::regclass;

-- name: TraceDocuments :many
-- Documents a trace names: by reference, by source (payment or refund id),
-- by the payment a credit note refunds, or by CFE series and number.
SELECT * FROM invoicer.fiscal_documents
WHERE reference = @q::text
   OR (source_kind IN ('payment', 'refund') AND source_ref = @q::text)
   OR original_source_ref = @q::text
   OR (provider_series = @series::text AND provider_number = @number::bigint)
ORDER BY id LIMIT 100;

-- name: TraceNotifications :many
-- The notification outbox rows of a document: event keys from lo
-- ("document:<reference>:") up to hi (the prefix with its last byte raised).
SELECT id, event_key, event_type, created_at, attempts, last_error, published_at, parked_at, parked_reason
FROM invoicer.outbox
WHERE (event_key COLLATE "C") >= @lo::text AND (event_key COLLATE "C") < @hi::text
ORDER BY id LIMIT 100;
