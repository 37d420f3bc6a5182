-- +goose Up
CREATE SCHEMA IF NOT EXISTS reconciler;

CREATE TABLE reconciler.runs (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    started_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    republished integer NOT NULL DEFAULT 0,
    checked     integer NOT NULL DEFAULT 0,
    error       text
);

CREATE TABLE reconciler.findings (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind         text NOT NULL,
    reference    text NOT NULL,
    detail       text NOT NULL DEFAULT '',
    opened_at    timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    closed_at    timestamptz
);
CREATE UNIQUE INDEX findings_open ON reconciler.findings (kind, reference) WHERE closed_at IS NULL;

CREATE TABLE reconciler.leases (
    name       text PRIMARY KEY,
    holder     text NOT NULL,
    token      bigint NOT NULL,
    expires_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE reconciler.leases, reconciler.findings, reconciler.runs;
