-- +goose Up
-- The relay claims one shard's rows with a filter on the row's slot,
-- (hashtext(event_key) & 1023) (pkg/outbox.SlotSQL). Without statistics on
-- that expression the planner guesses it keeps 0.5 % of the rows and, for a
-- large backlog, sorts every pending row instead of walking the due index
-- in id order; these statistics (filled by ANALYZE) give it the real share.
CREATE STATISTICS ingest.outbox_slot ON ((hashtext(event_key) & 1023)) FROM ingest.outbox;

-- +goose Down
DROP STATISTICS ingest.outbox_slot;
