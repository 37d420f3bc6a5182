-- name: RefundsSucceededBefore :many
-- RefundsSucceededBefore returns one keyset page of refunds that succeeded
-- before @succeeded_before, in (succeeded_at, id) order, strictly after the
-- cursor (@after_succeeded_at, @after_id); the predicate has the shape of
-- PaymentsPaidBefore's. Read through the read-only ingest connection.
SELECT id, succeeded_at::timestamptz AS succeeded_at
FROM ingest.refunds
WHERE succeeded_at IS NOT NULL
  AND succeeded_at < @succeeded_before::timestamptz
  AND succeeded_at >= @after_succeeded_at::timestamptz
  AND (succeeded_at, id) > (@after_succeeded_at::timestamptz, @after_id::text)
ORDER BY succeeded_at, id
LIMIT @page_size;

-- name: RefundMoney :one
-- RefundMoney returns the money of refund @id, its payment and order, for a case.
SELECT r.id, r.payment_id, r.amount_minor, r.currency, coalesce(o.merchant_order_id, '')::text AS order_id
FROM ingest.refunds r
JOIN ingest.payments p ON p.id = r.payment_id
LEFT JOIN ingest.orders o ON o.id = p.order_id
WHERE r.id = @id;

-- name: RefundsByID :many
-- RefundsByID returns the recorded state of the refunds among @ids, for
-- the PSP audit. Read through the read-only ingest connection.
SELECT id, status, amount_minor, currency
FROM ingest.refunds
WHERE id = ANY(@ids::text[]);
