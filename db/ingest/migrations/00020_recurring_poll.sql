-- +goose Up
-- The status poller keeps looking, at a slower pace, for the later periods
-- of a recurring order past the young orders' window (a subscription's
-- execution whose every notification was lost): it reads recurring orders
-- by their last poll.
CREATE INDEX orders_recurring_polled ON ingest.orders (polled_at NULLS FIRST) WHERE recurring;

-- +goose Down
DROP INDEX ingest.orders_recurring_polled;
