-- +goose Up
-- A case is a situation a person must decide (docs/cases.md): money that
-- cannot become a valid document on its own. It is opened in the transaction
-- that records the outcome, at most one open case per (kind, subject), and
-- closed only with a record of who closed it, how and why.
CREATE TABLE ingest.cases (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind           text NOT NULL,
    subject        text NOT NULL,
    psp            text NOT NULL DEFAULT '',
    psp_payment_id text NOT NULL DEFAULT '',
    psp_refund_id  text NOT NULL DEFAULT '',
    order_id       text NOT NULL DEFAULT '',
    amount_minor   bigint,
    currency       text NOT NULL DEFAULT '',
    receipt_id     bigint,
    evidence       jsonb NOT NULL DEFAULT '{}',
    opened_at      timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    closed_at      timestamptz,
    closed_by      text,
    action         text,
    reason         text,
    CHECK ((closed_at IS NULL) = (action IS NULL))
);
CREATE UNIQUE INDEX cases_open_subject ON ingest.cases (kind, subject) WHERE closed_at IS NULL;
CREATE INDEX cases_open ON ingest.cases (opened_at) WHERE closed_at IS NULL;
CREATE INDEX cases_closed ON ingest.cases (closed_at DESC) WHERE closed_at IS NOT NULL;

-- A relay that parks one of this schema's outbox rows opens a case in the
-- same transaction, and unparking it closes the case. The function runs as
-- the schema's owner, so the relay needs no privilege on the cases table;
-- the closing actor and reason come from the session settings
-- onceflow.actor and onceflow.reason when the unparking transaction sets them.
-- +goose StatementBegin
CREATE FUNCTION ingest.outbox_parked_case() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, ingest AS $$
BEGIN
    IF NEW.parked_at IS NOT NULL AND OLD.parked_at IS NULL THEN
        INSERT INTO ingest.cases (kind, subject, evidence)
        VALUES ('parked_outbox_row', 'outbox:' || NEW.id,
                jsonb_build_object('event_key', NEW.event_key, 'event_type', NEW.event_type,
                                   'parked_reason', left(coalesce(NEW.parked_reason, ''), 500)))
        ON CONFLICT (kind, subject) WHERE closed_at IS NULL
        DO UPDATE SET updated_at = now(), evidence = EXCLUDED.evidence;
    ELSIF NEW.parked_at IS NULL AND OLD.parked_at IS NOT NULL THEN
        UPDATE ingest.cases
        SET closed_at = now(), updated_at = now(), action = 'unpark',
            closed_by = coalesce(nullif(current_setting('onceflow.actor', true), ''), session_user::text),
            reason = nullif(current_setting('onceflow.reason', true), '')
        WHERE kind = 'parked_outbox_row' AND subject = 'outbox:' || NEW.id AND closed_at IS NULL;
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER outbox_parked_case AFTER UPDATE OF parked_at ON ingest.outbox
    FOR EACH ROW EXECUTE FUNCTION ingest.outbox_parked_case();

-- +goose Down
DROP TRIGGER outbox_parked_case ON ingest.outbox;
DROP FUNCTION ingest.outbox_parked_case();
DROP TABLE ingest.cases;
