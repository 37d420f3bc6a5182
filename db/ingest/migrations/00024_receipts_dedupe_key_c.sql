-- +goose Up
-- The console finds a payment's receipts by the prefix of their dedupe key
-- compared in the C collation, which needed an index of its own beside the
-- unique (scope, dedupe_key): two index entries for every receipt accepted.
-- The column now is in the C collation and leads the unique index, which then
-- serves both the intake's ON CONFLICT (scope, dedupe_key) and the console's
-- byte-order range. Uniqueness is unchanged: every deterministic collation
-- calls two strings equal only when their bytes are. The unique index is
-- built under the table's lock: on a large table run this in a quiet moment.
ALTER TABLE ingest.webhook_receipts
    ALTER COLUMN dedupe_key TYPE text COLLATE "C",
    DROP CONSTRAINT webhook_receipts_scope_dedupe_key_key,
    ADD CONSTRAINT webhook_receipts_dedupe_key_scope_key UNIQUE (dedupe_key, scope);
DROP INDEX ingest.webhook_receipts_dedupe_c;

-- +goose Down
ALTER TABLE ingest.webhook_receipts
    DROP CONSTRAINT webhook_receipts_dedupe_key_scope_key,
    ALTER COLUMN dedupe_key TYPE text COLLATE "default",
    ADD CONSTRAINT webhook_receipts_scope_dedupe_key_key UNIQUE (scope, dedupe_key);
CREATE INDEX webhook_receipts_dedupe_c ON ingest.webhook_receipts ((dedupe_key COLLATE "C"));
