-- name: PaymentApply :exec
-- Records the payment's state, moving only forward: a lower-ranked status
-- (a late PENDING after PAID) changes nothing. Returns the stored row.
INSERT INTO ingest.payments AS p (id, order_id, status, status_rank, amount_minor, currency, paid_at)
VALUES (@id, @order_id, @status, @status_rank, @amount_minor, @currency,
        CASE WHEN @status = 'PAID' THEN now() END)
ON CONFLICT (id) DO UPDATE
SET status = excluded.status, status_rank = excluded.status_rank,
    paid_at = coalesce(p.paid_at, excluded.paid_at), updated_at = now()
WHERE excluded.status_rank > p.status_rank;

-- name: PaymentGet :one
SELECT * FROM ingest.payments WHERE id = @id;
