-- +goose Up
-- The console finds a document's notifications by the prefix of their event
-- key compared in the C collation, which needed an index of its own beside
-- the unique one: two index entries for every notification written. The
-- column now is in the C collation itself, so its unique index serves both
-- the writers' ON CONFLICT (event_key) and the console's byte-order range.
-- Uniqueness is unchanged: every deterministic collation calls two strings
-- equal only when their bytes are. The unique index is rebuilt under the
-- table's lock: on a large outbox run this in a quiet moment.
ALTER TABLE invoicer.outbox ALTER COLUMN event_key TYPE text COLLATE "C";
DROP INDEX invoicer.outbox_event_key_c;

-- +goose Down
ALTER TABLE invoicer.outbox ALTER COLUMN event_key TYPE text COLLATE "default";
CREATE INDEX outbox_event_key_c ON invoicer.outbox ((event_key COLLATE "C"));
