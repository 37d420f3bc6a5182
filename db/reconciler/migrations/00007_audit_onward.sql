-- +goose Up
-- A day too large for one answer is, while it is today, listed onward
-- between its full listings (docs/reconciler-audit.md): only the numbers
-- above those its earlier listings saw, type by type. onward_at is when it
-- was last listed so; audit_day_numbers keeps, per CFE type, the highest
-- number a listing of the day saw.
ALTER TABLE reconciler.audit_days ADD COLUMN onward_at timestamptz;

CREATE TABLE reconciler.audit_day_numbers (
    provider       text NOT NULL,
    day            date NOT NULL,
    cfe_type       integer NOT NULL,
    listed_through bigint NOT NULL,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (provider, day, cfe_type)
);

-- +goose Down
DROP TABLE reconciler.audit_day_numbers;
ALTER TABLE reconciler.audit_days DROP COLUMN onward_at;
