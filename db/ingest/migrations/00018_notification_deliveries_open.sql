-- +goose NO TRANSACTION
-- +goose Up
-- The merchant deliveries gauge counts the notifications still open
-- (pending, parked) at every scrape; delivered ones are the table's history,
-- kept for the retention period. This index lets that count read the open
-- rows only, whatever the history; it is built without blocking the
-- deliverer's writes.
CREATE INDEX CONCURRENTLY IF NOT EXISTS notification_deliveries_open ON ingest.notification_deliveries (status) WHERE status <> 'delivered';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS ingest.notification_deliveries_open;
