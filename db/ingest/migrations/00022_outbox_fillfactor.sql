-- +goose Up
-- The relay marks each outbox row published with one UPDATE. published_at is
-- indexed (outbox_due's predicate, outbox_published), so that update can never
-- be HOT; but when the new row version lands on the old one's page, PostgreSQL
-- logs only the bytes that changed (prefix and suffix compression), not the
-- whole row with its payload. Full pages (the default) sent every new version
-- to another page: about 1 KB of WAL per published event. Half-full pages
-- leave room for each row's one update.
ALTER TABLE ingest.outbox SET (fillfactor = 50);

-- +goose Down
ALTER TABLE ingest.outbox RESET (fillfactor);
