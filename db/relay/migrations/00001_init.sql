-- +goose Up
CREATE SCHEMA IF NOT EXISTS relay;

CREATE TABLE relay.leases (
    name       text PRIMARY KEY,
    holder     text NOT NULL,
    token      bigint NOT NULL,
    expires_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE relay.leases;
