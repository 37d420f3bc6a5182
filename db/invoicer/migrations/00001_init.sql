-- +goose Up
CREATE SCHEMA IF NOT EXISTS invoicer;

CREATE TABLE invoicer.fiscal_documents (
    id                     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source_kind            text NOT NULL CHECK (source_kind IN ('payment', 'refund')),
    source_ref             text NOT NULL,
    kind                   text NOT NULL CHECK (kind IN ('invoice', 'credit_note')),
    event_key              text NOT NULL,
    reference              text NOT NULL UNIQUE CHECK (reference ~ '^[1-9][0-9]{0,17}$'),
    cfe_type               integer NOT NULL,
    status                 text NOT NULL DEFAULT 'pending' CHECK (status IN
                           ('pending', 'unknown', 'pending_dgi', 'authorized', 'issued',
                            'rejected', 'voided', 'needs_attention')),
    amount_minor           bigint NOT NULL CHECK (amount_minor > 0),
    currency               text NOT NULL,
    buyer                  jsonb NOT NULL,
    lines                  jsonb NOT NULL DEFAULT '[]',
    original_source_ref    text,
    provider_series        text,
    provider_number        bigint,
    provider_status        text,
    provider_cae           text,
    provider_security_code text,
    provider_url           text,
    issue_date             date,
    attempts               integer NOT NULL DEFAULT 0,
    unknown_since          timestamptz,
    lease_token            uuid,
    lease_expires_at       timestamptz,
    due_at                 timestamptz NOT NULL DEFAULT now(),
    dgi_polls              integer NOT NULL DEFAULT 0,
    last_error             text,
    attention_reason       text,
    created_at             timestamptz NOT NULL DEFAULT now(),
    updated_at             timestamptz NOT NULL DEFAULT now(),
    UNIQUE (source_kind, source_ref, kind),
    CHECK ((kind = 'credit_note') = (original_source_ref IS NOT NULL))
);
CREATE INDEX fiscal_documents_due ON invoicer.fiscal_documents (due_at)
    WHERE status IN ('pending', 'unknown', 'pending_dgi');
CREATE INDEX fiscal_documents_original ON invoicer.fiscal_documents (original_source_ref)
    WHERE original_source_ref IS NOT NULL;

CREATE TABLE invoicer.emission_attempts (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    document_id bigint NOT NULL REFERENCES invoicer.fiscal_documents (id),
    operation   text NOT NULL CHECK (operation IN ('lookup', 'emit', 'status')),
    outcome     text NOT NULL,
    error       text,
    latency_ms  integer NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX emission_attempts_document ON invoicer.emission_attempts (document_id);

CREATE TABLE invoicer.outbox (
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
CREATE INDEX outbox_due ON invoicer.outbox (id) WHERE published_at IS NULL AND parked_at IS NULL;

CREATE TABLE invoicer.leases (
    name       text PRIMARY KEY,
    holder     text NOT NULL,
    token      bigint NOT NULL,
    expires_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE invoicer.leases, invoicer.outbox, invoicer.emission_attempts, invoicer.fiscal_documents;
