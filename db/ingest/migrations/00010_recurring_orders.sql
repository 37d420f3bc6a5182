-- +goose Up
-- A recurring order (a subscription) takes one payment per period: each
-- PAID payment of it that matches its amount is invoiced as its own sale,
-- instead of being a second payment on a paid order.
ALTER TABLE ingest.orders ADD COLUMN recurring boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE ingest.orders DROP COLUMN recurring;
