-- +goose Up
-- The relay's retention deletes published rows oldest first, and its
-- operators list parked rows: both stay index scans as the outbox grows.
CREATE INDEX outbox_published ON ingest.outbox (published_at) WHERE published_at IS NOT NULL;
CREATE INDEX outbox_parked ON ingest.outbox (id) WHERE parked_at IS NOT NULL AND published_at IS NULL;

-- +goose Down
DROP INDEX ingest.outbox_published, ingest.outbox_parked;
