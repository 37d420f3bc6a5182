-- +goose Up
-- The status poller claims orders by when each is next due, through an index
-- that holds only the orders still on its schedule: a claim reads the orders
-- it returns. Before, it read every order created within the give-up window
-- (with a payments look-up each) to find the 50 due, and every order of that
-- window is due once the poller is behind. An order is due INGEST_POLL_AFTER
-- after its creation and, after each poll, a period later (INGEST_POLL_EVERY,
-- doubled at each poll up to INGEST_POLL_EVERY_MAX) until its
-- give-up; then next_poll_at is NULL and the order leaves the index.
ALTER TABLE ingest.orders ADD COLUMN next_poll_at timestamptz;
-- The orders still within the default give-ups stay on the schedule, due at
-- once in the order the poller took them before (the least recently polled
-- first): those of the last 72 hours with no PAID payment, or recurring,
-- and the paid ones of the last hour. A claim takes an order past the
-- give-up it is configured with off the schedule without polling it.
UPDATE ingest.orders o SET next_poll_at = coalesce(o.polled_at, o.created_at)
WHERE o.created_at > now() - interval '72 hours'
  AND (o.recurring OR o.created_at > now() - interval '1 hour'
       OR NOT EXISTS (SELECT 1 FROM ingest.payments p WHERE p.order_id = o.id AND p.status_rank >= 40));
CREATE INDEX orders_next_poll ON ingest.orders (next_poll_at) WHERE next_poll_at IS NOT NULL;

-- +goose Down
DROP INDEX ingest.orders_next_poll;
ALTER TABLE ingest.orders DROP COLUMN next_poll_at;
