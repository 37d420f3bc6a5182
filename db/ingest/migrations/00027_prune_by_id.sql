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

-- A PSP's receipt is keyed "<kind>:<event id>:<STATUS>": the console finds
-- it by event id through the prefix of that key, in the key's unique index.
-- webhook_receipts_event_id cost two entries a receipt (it was inserted
-- and finished).
DROP INDEX ingest.webhook_receipts_event_id;

-- +goose Down
CREATE INDEX webhook_receipts_event_id ON ingest.webhook_receipts (event_id) WHERE event_id <> '';
CREATE INDEX payments_order_paid ON ingest.payments (order_id) WHERE status = 'PAID';
CREATE INDEX psp_fetches_fetched_at ON ingest.psp_fetches (fetched_at);
CREATE INDEX webhook_receipts_finished ON ingest.webhook_receipts (received_at) WHERE status IN ('done', 'rejected');
