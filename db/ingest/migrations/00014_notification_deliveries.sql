-- +goose Up
-- Outbound merchant notifications (docs/notifications.md): one delivery per
-- event, keyed by the event's stable id (the webhook-id header), POSTed to
-- the merchant until a 2xx, retried with backoff, parked after the
-- configured number of failures; every attempt is logged.
CREATE TABLE ingest.notification_deliveries (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id         text NOT NULL UNIQUE CHECK (event_id <> '' AND strpos(event_id, '.') = 0),
    event_type       text NOT NULL,
    payload          bytea NOT NULL,
    status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'parked')),
    attempts         integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    lease_token      uuid,
    lease_expires_at timestamptz,
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    delivered_at     timestamptz,
    parked_at        timestamptz,
    -- the last operator replay: who, why and when
    replayed_by      text,
    replay_reason    text,
    replayed_at      timestamptz
);
CREATE INDEX notification_deliveries_due ON ingest.notification_deliveries (next_attempt_at) WHERE status = 'pending';

CREATE TABLE ingest.notification_attempts (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    delivery_id  bigint NOT NULL REFERENCES ingest.notification_deliveries (id) ON DELETE CASCADE,
    http_status  integer NOT NULL DEFAULT 0,
    error        text NOT NULL DEFAULT '',
    latency_ms   integer NOT NULL,
    attempted_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX notification_attempts_delivery ON ingest.notification_attempts (delivery_id);

-- +goose Down
DROP TABLE ingest.notification_attempts, ingest.notification_deliveries;
