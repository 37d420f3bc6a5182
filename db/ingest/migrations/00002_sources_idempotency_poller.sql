-- +goose Up
-- Receipts dedupe per scope, so one sender reaching two endpoints (two
-- sources sharing a scope) records one receipt; kind says how to apply it.
ALTER TABLE ingest.webhook_receipts
    ADD COLUMN scope text,
    ADD COLUMN kind text NOT NULL DEFAULT 'psp' CHECK (kind IN ('psp', 'fiscal_provider', 'generic'));
UPDATE ingest.webhook_receipts SET scope = source;
ALTER TABLE ingest.webhook_receipts
    ALTER COLUMN scope SET NOT NULL,
    DROP CONSTRAINT webhook_receipts_source_dedupe_key_key,
    ADD CONSTRAINT webhook_receipts_scope_dedupe_key_key UNIQUE (scope, dedupe_key);
-- Retention deletes finished receipts oldest first.
CREATE INDEX webhook_receipts_finished ON ingest.webhook_receipts (received_at) WHERE status IN ('done', 'rejected');
CREATE INDEX webhook_receipts_parked ON ingest.webhook_receipts (id) WHERE status = 'parked';

-- The status poller re-fetches orders whose payment has no final state.
ALTER TABLE ingest.orders
    ADD COLUMN polled_at timestamptz,
    ADD COLUMN polls integer NOT NULL DEFAULT 0;
CREATE INDEX orders_unsettled ON ingest.orders (created_at) WHERE psp_payment_id IS NOT NULL;

-- Idempotency-Key of the customer and order API: the first response to a
-- key is kept and replayed; response_status is NULL while in progress.
CREATE TABLE ingest.idempotency_keys (
    route           text NOT NULL,
    key             text NOT NULL,
    request_hash    bytea NOT NULL,
    response_status integer,
    response_body   bytea,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (route, key)
);
CREATE INDEX idempotency_keys_created ON ingest.idempotency_keys (created_at);

-- +goose Down
DROP TABLE ingest.idempotency_keys;
DROP INDEX ingest.orders_unsettled;
ALTER TABLE ingest.orders DROP COLUMN polls, DROP COLUMN polled_at;
DROP INDEX ingest.webhook_receipts_parked, ingest.webhook_receipts_finished;
ALTER TABLE ingest.webhook_receipts
    DROP CONSTRAINT webhook_receipts_scope_dedupe_key_key,
    ADD CONSTRAINT webhook_receipts_source_dedupe_key_key UNIQUE (source, dedupe_key),
    DROP COLUMN kind, DROP COLUMN scope;
