-- name: PaymentsPaidBefore :many
-- PaymentsPaidBefore returns one keyset page of payments paid before
-- @paid_before, in (paid_at, id) order, strictly after the cursor
-- (@after_paid_at, @after_id). The plain paid_at bound lets the payments_paid
-- index narrow the scan; the row comparison breaks ties between payments paid
-- at the same instant. Read through the read-only ingest connection.
SELECT id, paid_at::timestamptz AS paid_at
FROM ingest.payments
WHERE paid_at IS NOT NULL
  AND paid_at < @paid_before::timestamptz
  AND paid_at >= @after_paid_at::timestamptz
  AND (paid_at, id) > (@after_paid_at::timestamptz, @after_id::text)
ORDER BY paid_at, id
LIMIT @page_size;

-- name: PaymentMoney :one
-- PaymentMoney returns the money of payment @id and its order, for a case.
SELECT p.id, p.amount_minor, p.currency, coalesce(o.merchant_order_id, '')::text AS order_id
FROM ingest.payments p LEFT JOIN ingest.orders o ON o.id = p.order_id
WHERE p.id = @id;

-- name: PaymentsByID :many
-- PaymentsByID returns the recorded state of the payments among @ids, for
-- the PSP audit. Read through the read-only ingest connection.
SELECT id, status, amount_minor, currency
FROM ingest.payments
WHERE id = ANY(@ids::text[]);

-- name: KnownOrders :many
-- KnownOrders returns which of the merchant order ids @ids ingest holds,
-- for the PSP audit.
SELECT merchant_order_id
FROM ingest.orders
WHERE merchant_order_id = ANY(@ids::text[]);
