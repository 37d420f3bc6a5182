-- +goose NO TRANSACTION
-- +goose Up
-- The apply worker and the merchant deliverer claim the oldest due rows, by
-- (next_attempt_at, id), a batch at a time. Indexed by next_attempt_at
-- alone, the order had to be finished by a sort, and the plan a prepared
-- claim keeps when the table was analyzed with nothing pending (its usual
-- state) sorted every due row to take a batch: draining 43,000 receipts
-- took 130 ms a claim of 20 at first, so a backlog drained in time that
-- grew with its square. Indexed in the claim's own order, a claim reads its
-- batch and stops, whatever waits behind it. Both are built without
-- blocking the writers; a build that failed half way is dropped first.
DROP INDEX CONCURRENTLY IF EXISTS ingest.webhook_receipts_queue;
CREATE INDEX CONCURRENTLY webhook_receipts_queue ON ingest.webhook_receipts (next_attempt_at, id) WHERE status = 'pending';
DROP INDEX CONCURRENTLY IF EXISTS ingest.webhook_receipts_pending;
-- The deliveries' queue also serves the count of open deliveries by status
-- (pending, parked), which notification_deliveries_open did: left beside
-- it, that index, which matches the claim's status = 'pending', was the
-- plan's choice, and the sort with it.
DROP INDEX CONCURRENTLY IF EXISTS ingest.notification_deliveries_queue;
CREATE INDEX CONCURRENTLY notification_deliveries_queue ON ingest.notification_deliveries (status, next_attempt_at, id)
    WHERE status <> 'delivered';
DROP INDEX CONCURRENTLY IF EXISTS ingest.notification_deliveries_due;
DROP INDEX CONCURRENTLY IF EXISTS ingest.notification_deliveries_open;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_receipts_pending ON ingest.webhook_receipts (next_attempt_at) WHERE status = 'pending';
DROP INDEX CONCURRENTLY IF EXISTS ingest.webhook_receipts_queue;
CREATE INDEX CONCURRENTLY IF NOT EXISTS notification_deliveries_due ON ingest.notification_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX CONCURRENTLY IF NOT EXISTS notification_deliveries_open ON ingest.notification_deliveries (status) WHERE status <> 'delivered';
DROP INDEX CONCURRENTLY IF EXISTS ingest.notification_deliveries_queue;
