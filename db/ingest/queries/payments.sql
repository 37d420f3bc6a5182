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
-- PaymentApply for payments of distinct ids, all in one statement (two rows
-- of one id would update one row twice, which ON CONFLICT refuses).
INSERT INTO ingest.payments AS p (id, order_id, status, status_rank, amount_minor, currency, paid_at)
SELECT u.id, u.order_id, u.status, u.status_rank, u.amount_minor, u.currency,
       CASE WHEN u.status = 'PAID' THEN now() END
FROM ROWS FROM (unnest(@ids::text[]), unnest(@order_ids::uuid[]), unnest(@statuses::text[]),
                unnest(@status_ranks::integer[]), unnest(@amounts_minor::bigint[]), unnest(@currencies::text[]))
    AS u(id, order_id, status, status_rank, amount_minor, currency)
ON CONFLICT (id) DO UPDATE
SET status = excluded.status, status_rank = excluded.status_rank,
    paid_at = coalesce(p.paid_at, excluded.paid_at), updated_at = now()
WHERE excluded.status_rank > p.status_rank;

-- name: PaymentGet :one
SELECT * FROM ingest.payments WHERE id = @id;

-- name: PaymentLock :one
-- Locks a payment until the transaction ends, so two refunds of it are
-- checked against its amount one after the other; returns the amount.
SELECT amount_minor FROM ingest.payments WHERE id = @id FOR UPDATE;

-- name: PaymentOtherPaid :many
-- Locks the order, so two payments of it are checked one after the other,
-- and returns its PAID payments other than payment_id; none when payment_id
-- is itself recorded PAID (an operator accepted it as a separate sale).
SELECT p.id, p.amount_minor, p.currency
FROM ingest.orders o JOIN ingest.payments p ON p.order_id = o.id
WHERE o.id = @order_id AND p.status = 'PAID' AND p.id <> @payment_id::text
  AND NOT EXISTS (SELECT 1 FROM ingest.payments self WHERE self.id = @payment_id::text AND self.status = 'PAID')
FOR UPDATE OF o;
