-- +goose Up
-- The relays that compete for an outbox's shards, each with the time its
-- membership lapses unless it beats again (pkg/lease.Roster): a relay
-- counts the live ones to take its fair share of the shards.
CREATE TABLE relay.lease_members (
    grp        text NOT NULL,
    holder     text NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (grp, holder)
);

-- +goose Down
DROP TABLE relay.lease_members;
