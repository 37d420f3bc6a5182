-- +goose Up
-- What the provider audit knows per calendar day, so a run lists at the
-- provider only the days that are due (docs/reconciler-audit.md): when a day
-- was last listed in full, how many documents the provider returned, and how
-- many disagreements the audit saw on it (a day with any is listed again on
-- every run until it has none).
CREATE TABLE reconciler.audit_days (
    provider      text NOT NULL,
    day           date NOT NULL,
    listed_at     timestamptz NOT NULL,
    listed        integer NOT NULL,
    disagreements integer NOT NULL,
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (provider, day)
);

-- Up to when the audit has looked up, by reference, our documents that
-- changed: the next run looks up those updated since (minus an overlap).
CREATE TABLE reconciler.audit_state (
    provider      text PRIMARY KEY,
    changed_until timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE reconciler.audit_state;
DROP TABLE reconciler.audit_days;
