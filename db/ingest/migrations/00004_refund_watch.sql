-- +goose Up
-- Refunds the merchant created at the PSP and told ingest about, so the
-- status poller finds one whose notification never came, as it does for
-- payments through orders.psp_payment_id.
CREATE TABLE ingest.refund_watch (
    refund_id  text PRIMARY KEY,
    payment_id text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    polled_at  timestamptz,
    polls      integer NOT NULL DEFAULT 0
);
CREATE INDEX refund_watch_created ON ingest.refund_watch (created_at);

-- +goose Down
DROP TABLE ingest.refund_watch;
