-- name: ReceiptParkedCount :one
-- Parked receipts, counted from their partial index.
SELECT count(*)::bigint FROM ingest.webhook_receipts WHERE status = 'parked';

-- name: TraceReceiptsByDedupePrefix :many
-- Receipts whose dedupe key starts with a prefix ("payment:<id>:"): lo is
-- the prefix and hi the prefix with its last byte raised, so the range is
-- an index scan.
SELECT id, source, event_id, event_type, status, attempts, last_error, traceparent, received_at, processed_at
FROM ingest.webhook_receipts
WHERE (dedupe_key COLLATE "C") >= @lo::text AND (dedupe_key COLLATE "C") < @hi::text
ORDER BY id LIMIT 100;

-- name: TraceReceiptsByTraceID :many
SELECT id, source, event_id, event_type, status, attempts, last_error, traceparent, received_at, processed_at
FROM ingest.webhook_receipts
WHERE split_part(traceparent, '-', 2) = @trace_id::text AND traceparent <> ''
ORDER BY id LIMIT 100;

-- name: TraceReceiptDedupeKeys :many
-- The dedupe keys of receipts, to learn which payment a receipt found by
-- event or trace id names.
SELECT dedupe_key FROM ingest.webhook_receipts WHERE id = ANY(@ids::bigint[]);

-- name: TracePaymentsOfOrder :many
SELECT * FROM ingest.payments WHERE order_id = @order_id ORDER BY created_at LIMIT 100;

-- name: TraceRefundGet :one
SELECT * FROM ingest.refunds WHERE id = @id;

-- name: TraceRefundsOfPayment :many
SELECT * FROM ingest.refunds WHERE payment_id = @payment_id ORDER BY created_at LIMIT 100;

-- name: TraceOrderByMerchantID :one
SELECT * FROM ingest.orders WHERE merchant_order_id = @merchant_order_id;

-- name: TraceOutboxByKeys :many
-- Outbox rows by exact event key (payment:<id>:paid, refund:<id>:succeeded).
SELECT id, event_key, event_type, traceparent, created_at, attempts, last_error, published_at, parked_at, parked_reason
FROM ingest.outbox WHERE event_key = ANY(@keys::text[]) ORDER BY id;

-- name: CustomerReveal :one
-- A customer's personal data, for an operator who reveals it.
SELECT id, doc_type, doc_country, doc_number, legal_name, address, city, department, country, email
FROM ingest.customers WHERE id = @id;
