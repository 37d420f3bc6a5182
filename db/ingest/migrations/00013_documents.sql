-- +goose Up
-- The fiscal documents of ingest's payments and refunds as the invoicer
-- announced them on the notifications queue (docs/notifications.md): ingest
-- learns of documents only from those events, never from the invoicer's
-- tables. One row per document (its deterministic reference), holding the
-- latest announcement; payment_ref is the payment the document belongs to
-- (the source of an invoice, the payment a credit note corrects).
CREATE TABLE ingest.documents (
    reference     text PRIMARY KEY,
    source_kind   text NOT NULL CHECK (source_kind IN ('payment', 'refund')),
    source_ref    text NOT NULL,
    payment_ref   text NOT NULL,
    kind          text NOT NULL CHECK (kind IN ('invoice', 'credit_note')),
    revision      integer NOT NULL DEFAULT 0,
    status        text NOT NULL,
    cfe_type      integer NOT NULL,
    series        text NOT NULL DEFAULT '',
    number        bigint NOT NULL DEFAULT 0,
    cae_id        text NOT NULL DEFAULT '',
    cae_from      bigint NOT NULL DEFAULT 0,
    cae_to        bigint NOT NULL DEFAULT 0,
    cae_expires   date,
    security_code text NOT NULL DEFAULT '',
    verify_url    text NOT NULL DEFAULT '',
    issue_date    date,
    amount_minor  bigint NOT NULL DEFAULT 0,
    currency      text NOT NULL DEFAULT '',
    reason        text NOT NULL DEFAULT '',
    event_key     text NOT NULL,
    occurred_at   timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX documents_payment ON ingest.documents (payment_ref);

-- +goose Down
DROP TABLE ingest.documents;
