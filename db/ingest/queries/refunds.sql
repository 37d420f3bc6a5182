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

-- name: RefundWatch :execrows
-- Registers a refund for the poller; registering it again changes nothing.
INSERT INTO ingest.refund_watch (refund_id, payment_id)
VALUES (@refund_id, @payment_id)
ON CONFLICT (refund_id) DO NOTHING;

-- name: RefundClaimUnsettled :many
-- Watched refunds not yet in a final state, older than settle_before, not
-- polled since polled_before and created after give_up_before; each
-- claimed refund is stamped so another poller skips it.
UPDATE ingest.refund_watch w
SET polled_at = now(), polls = polls + 1
WHERE w.refund_id IN (
    SELECT rw.refund_id FROM ingest.refund_watch rw
    LEFT JOIN ingest.refunds r ON r.id = rw.refund_id
    WHERE (r.id IS NULL OR r.status_rank < 30)
      AND rw.created_at < @settle_before AND rw.created_at > @give_up_before
      AND (rw.polled_at IS NULL OR rw.polled_at < @polled_before)
    ORDER BY rw.polled_at NULLS FIRST, rw.created_at
    LIMIT @max_rows
    FOR UPDATE OF rw SKIP LOCKED)
RETURNING w.refund_id;
