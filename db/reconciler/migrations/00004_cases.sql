-- +goose Up
-- A case is a situation a person must decide (docs/cases.md): money that
-- cannot become a valid document on its own. It is opened in the transaction
-- that records the outcome, at most one open case per (kind, subject), and
-- closed only with a record of who closed it, how and why.
CREATE TABLE reconciler.cases (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind           text NOT NULL,
    subject        text NOT NULL,
    psp            text NOT NULL DEFAULT '',
    psp_payment_id text NOT NULL DEFAULT '',
    psp_refund_id  text NOT NULL DEFAULT '',
    order_id       text NOT NULL DEFAULT '',
    amount_minor   bigint,
    currency       text NOT NULL DEFAULT '',
    evidence       jsonb NOT NULL DEFAULT '{}',
    opened_at      timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    closed_at      timestamptz,
    closed_by      text,
    action         text,
    reason         text,
    CHECK ((closed_at IS NULL) = (action IS NULL))
);
CREATE UNIQUE INDEX cases_open_subject ON reconciler.cases (kind, subject) WHERE closed_at IS NULL;
CREATE INDEX cases_open ON reconciler.cases (opened_at) WHERE closed_at IS NULL;
CREATE INDEX cases_closed ON reconciler.cases (closed_at DESC) WHERE closed_at IS NOT NULL;

-- +goose Down
DROP TABLE reconciler.cases;
