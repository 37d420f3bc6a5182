-- +goose Up
-- serve runs the audits in a loop of their own, apart from the sweep and
-- the detectors, so a listing that takes hours holds back neither
-- (docs/reconciler-audit.md). part says what a run did: all (run-once and
-- POST /admin/runs), sweep (the sweep and the detectors) or audit.
ALTER TABLE reconciler.runs ADD COLUMN part text NOT NULL DEFAULT 'all'
    CHECK (part IN ('all', 'sweep', 'audit'));

-- +goose Down
ALTER TABLE reconciler.runs DROP COLUMN part;
