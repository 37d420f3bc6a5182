-- name: PaymentApply :batchexec
-- Records payments' states, moving only forward: a lower-ranked status
-- (a late PENDING after PAID) changes nothing. One statement per payment,
-- all sent in one round trip.
INSERT INTO ingest.payments AS p (id, order_id, status, status_rank, amount_minor, currency, paid_at)
VALUES (@id, @order_id, @status, @status_rank, @amount_minor, @currency,
        CASE WHEN @status = 'PAID' THEN now() END)
ON CONFLICT (id) DO UPDATE
SET status = excluded.status, status_rank = excluded.status_rank,
    paid_at = coalesce(p.paid_at, excluded.paid_at), updated_at = now()
WHERE excluded.status_rank > p.status_rank;

-- name: PaymentApplyMany :exec
-- PaymentApply for payments of distinct ids, all in one statement: those
-- held move forward, the others are inserted. It looks held payments up
-- rather than saying ON CONFLICT, which logs a confirmation record after
-- every row inserted; that is safe because the caller holds the payments'
-- orders locked (OrdersLockForPayments), so no other transaction inserts
-- one of them meanwhile (one would fail this with a unique violation).
WITH u AS (
    SELECT v.id, v.order_id, v.status, v.status_rank, v.amount_minor, v.currency FROM ROWS FROM (unnest(@ids::text[]), unnest(@order_ids::uuid[]), unnest(@statuses::text[]),
                             unnest(@status_ranks::integer[]), unnest(@amounts_minor::bigint[]),
                             unnest(@currencies::text[]))
        AS v(id, order_id, status, status_rank, amount_minor, currency)
), moved AS (
    UPDATE ingest.payments AS p
    SET status = u.status, status_rank = u.status_rank,
        paid_at = coalesce(p.paid_at, CASE WHEN u.status = 'PAID' THEN now() END), updated_at = now()
    FROM u
    WHERE p.id = u.id AND u.status_rank > p.status_rank
)
INSERT INTO ingest.payments (id, order_id, status, status_rank, amount_minor, currency, paid_at)
SELECT u.id, u.order_id, u.status, u.status_rank, u.amount_minor, u.currency,
       CASE WHEN u.status = 'PAID' THEN now() END
FROM u
WHERE NOT EXISTS (SELECT 1 FROM ingest.payments p WHERE p.id = u.id);

-- name: PaymentGet :one
SELECT * FROM ingest.payments WHERE id = @id;

-- name: PaymentLock :one
-- Locks a payment until the transaction ends, so two refunds of it are
-- checked against its amount one after the other; returns the amount.
SELECT amount_minor FROM ingest.payments WHERE id = @id FOR UPDATE;

-- name: OrdersLockForPayments :many
-- Locks orders until the transaction ends, in id order (two batches lock
-- the orders they share in the same order), so two payments of one order
-- are checked one after the other: the next statement of the second waits
-- for the first to commit and then sees its payment.
SELECT id FROM ingest.orders WHERE id = ANY(@order_ids::uuid[]) ORDER BY id FOR NO KEY UPDATE;

-- name: PaymentPaidOfOrders :many
-- The orders' PAID payments, earliest first, with those of payment_ids
-- recorded PAID themselves (re-delivered, or an operator accepted one as a
-- separate sale). Run after OrdersLockForPayments, in a statement of its
-- own, so it sees what a payment checked before it committed.
SELECT id, order_id, amount_minor, currency
FROM ingest.payments
WHERE status = 'PAID' AND (order_id = ANY(@order_ids::uuid[]) OR id = ANY(@payment_ids::text[]))
ORDER BY paid_at, id;
