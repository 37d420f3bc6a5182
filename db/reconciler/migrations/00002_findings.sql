-- +goose Up
-- A run records what each of its checks found; findings are opened once per
-- (kind, reference) and closed when a later run of the same check no longer
-- sees them.
ALTER TABLE reconciler.runs
    ADD COLUMN missing         integer NOT NULL DEFAULT 0,
    ADD COLUMN missing_events  integer NOT NULL DEFAULT 0,
    ADD COLUMN findings_seen   integer NOT NULL DEFAULT 0,
    ADD COLUMN findings_closed integer NOT NULL DEFAULT 0;
ALTER TABLE reconciler.findings ADD COLUMN seen_count integer NOT NULL DEFAULT 1;
CREATE INDEX findings_closed ON reconciler.findings (closed_at DESC) WHERE closed_at IS NOT NULL;

-- +goose Down
DROP INDEX reconciler.findings_closed;
ALTER TABLE reconciler.findings DROP COLUMN seen_count;
ALTER TABLE reconciler.runs DROP COLUMN findings_closed, DROP COLUMN findings_seen,
    DROP COLUMN missing_events, DROP COLUMN missing;
