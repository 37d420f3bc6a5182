-- +goose Up
-- PAID (and a refund's SUCCESS) now outrank every other status, the other
-- final ones included (status_rank: 0 unknown, 10 PENDING, 20
-- AUTHORIZED/VERIFIED, 30 REJECTED/CANCELLED/EXPIRED, 40 PAID or SUCCESS),
-- so a late PAID after EXPIRED moves the payment to PAID.
UPDATE ingest.payments SET status_rank = 40 WHERE status = 'PAID';
UPDATE ingest.refunds SET status_rank = 40 WHERE status = 'SUCCESS';
-- Before, such a late PAID (or SUCCESS) emitted its event but left the
-- status as it was: those whose event is still in the outbox become what
-- the event says, so their refunds are applied on their next retry.
UPDATE ingest.payments p
SET status = 'PAID', status_rank = 40, paid_at = coalesce(p.paid_at, o.created_at), updated_at = now()
FROM ingest.outbox o
WHERE o.event_key = 'payment:' || p.id || ':paid' AND p.status <> 'PAID';
UPDATE ingest.refunds r
SET status = 'SUCCESS', status_rank = 40, succeeded_at = coalesce(r.succeeded_at, o.created_at), updated_at = now()
FROM ingest.outbox o
WHERE o.event_key = 'refund:' || r.id || ':succeeded' AND r.status <> 'SUCCESS';

-- +goose Down
UPDATE ingest.payments SET status_rank = 30 WHERE status = 'PAID';
UPDATE ingest.refunds SET status_rank = 30 WHERE status = 'SUCCESS';
