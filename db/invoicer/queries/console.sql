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
