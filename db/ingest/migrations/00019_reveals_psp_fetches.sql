-- +goose Up
-- reveals records each time an operator was shown personal data ingest
-- holds (a customer's, or a case's evidence): who, which subject, why and
-- when; never the data. The reveal's request writes it before it answers.
CREATE TABLE ingest.reveals (
    id          bigserial PRIMARY KEY,
    subject     text NOT NULL,
    actor       text NOT NULL,
    reason      text NOT NULL,
    revealed_at timestamptz NOT NULL DEFAULT now()
);

-- psp_fetches records each call to a PSP for one object (a re-fetch of a
-- payment or refund, a search by order reference) with its latency and
-- outcome, for the console's trace. It is pruned with the receipts
-- (INGEST_RECEIPT_RETENTION).
CREATE TABLE ingest.psp_fetches (
    id         bigserial PRIMARY KEY,
    psp        text NOT NULL,
    operation  text NOT NULL,
    object_id  text NOT NULL,
    outcome    text NOT NULL,
    latency_ms integer NOT NULL,
    fetched_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX psp_fetches_object ON ingest.psp_fetches (object_id, id);
CREATE INDEX psp_fetches_fetched_at ON ingest.psp_fetches (fetched_at);

-- +goose Down
DROP TABLE ingest.psp_fetches;
DROP TABLE ingest.reveals;
