-- name: RefundApply :exec
-- Records the refund's state, moving only forward.
INSERT INTO ingest.refunds AS r (id, payment_id, status, status_rank, amount_minor, currency, succeeded_at)
VALUES (@id, @payment_id, @status, @status_rank, @amount_minor, @currency,
        CASE WHEN @status = 'SUCCESS' THEN now() END)
ON CONFLICT (id) DO UPDATE
SET status = excluded.status, status_rank = excluded.status_rank,
    succeeded_at = coalesce(r.succeeded_at, excluded.succeeded_at), updated_at = now()
WHERE excluded.status_rank > r.status_rank;

-- name: RefundSumOthersSucceeded :one
-- The amount already refunded successfully on a payment, except refund id.
SELECT coalesce(sum(amount_minor), 0)::bigint FROM ingest.refunds
WHERE payment_id = @payment_id AND status = 'SUCCESS' AND id <> @id;
