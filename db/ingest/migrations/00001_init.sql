-- +goose Up
CREATE SCHEMA IF NOT EXISTS ingest;

CREATE TABLE ingest.webhook_receipts (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source           text NOT NULL,
    dedupe_key       text NOT NULL,
    event_id         text NOT NULL DEFAULT '',
    event_type       text NOT NULL DEFAULT '',
    body             bytea NOT NULL,
    status           text NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'done', 'rejected', 'parked')),
    attempts         integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    lease_token      uuid,
    lease_expires_at timestamptz,
    last_error       text,
    received_at      timestamptz NOT NULL DEFAULT now(),
    processed_at     timestamptz,
    UNIQUE (source, dedupe_key)
);
CREATE INDEX webhook_receipts_pending ON ingest.webhook_receipts (next_attempt_at) WHERE status = 'pending';

CREATE TABLE ingest.customers (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    doc_type    text NOT NULL CHECK (doc_type IN ('RUT', 'CI', 'PASSPORT', 'OTHER')),
    doc_country text NOT NULL,
    doc_number  text NOT NULL,
    legal_name  text NOT NULL,
    address     text NOT NULL DEFAULT '',
    city        text NOT NULL DEFAULT '',
    department  text NOT NULL DEFAULT '',
    country     text NOT NULL DEFAULT '',
    email       text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE ingest.orders (
    id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    merchant_order_id text NOT NULL UNIQUE,
    customer_id       uuid NOT NULL REFERENCES ingest.customers (id),
    amount_minor      bigint NOT NULL CHECK (amount_minor > 0),
    currency          text NOT NULL,
    lines             jsonb NOT NULL DEFAULT '[]',
    psp_payment_id    text UNIQUE,
    created_at        timestamptz NOT NULL DEFAULT now()
);

-- status_rank orders PSP states so a transition only moves forward:
-- 0 unknown, 10 PENDING, 20 AUTHORIZED/VERIFIED, 30 PAID/REJECTED/CANCELLED/EXPIRED.
CREATE TABLE ingest.payments (
    id           text PRIMARY KEY,
    order_id     uuid NOT NULL REFERENCES ingest.orders (id),
    status       text NOT NULL,
    status_rank  integer NOT NULL,
    amount_minor bigint NOT NULL,
    currency     text NOT NULL,
    paid_at      timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payments_paid ON ingest.payments (paid_at) WHERE paid_at IS NOT NULL;

CREATE TABLE ingest.refunds (
    id           text PRIMARY KEY,
    payment_id   text NOT NULL REFERENCES ingest.payments (id),
    status       text NOT NULL,
    status_rank  integer NOT NULL,
    amount_minor bigint NOT NULL,
    currency     text NOT NULL,
    succeeded_at timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX refunds_succeeded ON ingest.refunds (succeeded_at) WHERE succeeded_at IS NOT NULL;

CREATE TABLE ingest.outbox (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_key       text NOT NULL UNIQUE,
    event_type      text NOT NULL,
    payload         bytea NOT NULL,
    traceparent     text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    attempts        integer NOT NULL DEFAULT 0,
    last_error      text,
    published_at    timestamptz,
    parked_at       timestamptz,
    parked_reason   text
);
CREATE INDEX outbox_due ON ingest.outbox (id) WHERE published_at IS NULL AND parked_at IS NULL;

CREATE TABLE ingest.leases (
    name       text PRIMARY KEY,
    holder     text NOT NULL,
    token      bigint NOT NULL,
    expires_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE ingest.leases, ingest.outbox, ingest.refunds, ingest.payments, ingest.orders,
    ingest.customers, ingest.webhook_receipts;
