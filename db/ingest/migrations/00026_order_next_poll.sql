-- +goose Up
-- The status poller claims orders by when each is next due, through an index
-- that holds only the orders still on its schedule: a claim reads the orders
-- it returns. Before, it read every order created within the give-up window
-- (with a payments look-up each) to find the 50 due, and every order of that
-- window is due once the poller is behind. An order is due INGEST_POLL_AFTER
-- after its creation and, after each poll, INGEST_POLL_EVERY later until its
-- give-up; then next_poll_at is NULL and the order leaves the index.
ALTER TABLE ingest.orders ADD COLUMN next_poll_at timestamptz;
-- The orders within the default give-up (72 h) stay on the schedule, due at
-- once in the order the poller took them before (the least recently polled
-- first); a claim takes an order past the give-up it is configured with off
-- the schedule without polling it.
UPDATE ingest.orders SET next_poll_at = coalesce(polled_at, created_at) WHERE created_at > now() - interval '72 hours';
CREATE INDEX orders_next_poll ON ingest.orders (next_poll_at) WHERE next_poll_at IS NOT NULL;

-- +goose Down
DROP INDEX ingest.orders_next_poll;
ALTER TABLE ingest.orders DROP COLUMN next_poll_at;
