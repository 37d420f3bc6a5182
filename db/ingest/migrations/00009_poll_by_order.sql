-- +goose Up
-- The status poller now searches the PSP by order reference for every young
-- order, linked to a PSP payment or not (a payment whose webhook was lost, a
-- second payment on a paid order), and follows every known payment of the
-- order that has no final state: it reads orders by age alone and payments
-- by order.
DROP INDEX ingest.orders_unsettled;
CREATE INDEX orders_created ON ingest.orders (created_at);
CREATE INDEX payments_order ON ingest.payments (order_id);

-- +goose Down
DROP INDEX ingest.payments_order;
DROP INDEX ingest.orders_created;
CREATE INDEX orders_unsettled ON ingest.orders (created_at) WHERE psp_payment_id IS NOT NULL;
