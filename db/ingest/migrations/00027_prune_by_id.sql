-- +goose Up
-- Index entries every payment paid for and no read needs (bench/README.md,
-- where the WAL goes):
--
-- Finished receipts and PSP calls are pruned by id, from the oldest up to
-- the first one received (or made) within the retention, as the outboxes
-- are: a receipt received before the cutoff was inserted before it, so the
-- primary key finds them. webhook_receipts_finished cost an entry for every
-- receipt finished, psp_fetches_fetched_at one for every call.
DROP INDEX ingest.webhook_receipts_finished;
DROP INDEX ingest.psp_fetches_fetched_at;

-- The PAID payments of an order are found through payments_order (an order
-- has few payments, a subscription's one a period); payments_order_paid
-- cost an entry for every payment paid.
DROP INDEX ingest.payments_order_paid;

-- +goose Down
CREATE INDEX payments_order_paid ON ingest.payments (order_id) WHERE status = 'PAID';
CREATE INDEX psp_fetches_fetched_at ON ingest.psp_fetches (fetched_at);
CREATE INDEX webhook_receipts_finished ON ingest.webhook_receipts (received_at) WHERE status IN ('done', 'rejected');
