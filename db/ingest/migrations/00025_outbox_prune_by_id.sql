-- +goose Up
-- The relay prunes published rows by id, from the oldest up to the first row
-- created within the retention (pkg/outbox.Prune): a row published before
-- the cutoff was created before it, so the primary key finds them and the
-- index on published_at is not needed. It cost an entry for every row the
-- relay marked published, a third of the index entries that mark writes.
DROP INDEX ingest.outbox_published;

-- +goose Down
CREATE INDEX outbox_published ON ingest.outbox (published_at) WHERE published_at IS NOT NULL;
