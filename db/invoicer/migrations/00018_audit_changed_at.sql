-- +goose Up
-- The reconciler's provider audit looks up, each run, the documents whose
-- provider copy may have changed since its previous run. It used an index on
-- updated_at, which every claim and send marker sets: no update of a document
-- could then be HOT, and each logged new entries in every index (about
-- 1.3 KB of WAL a document). audit_changed_at moves only when a field the
-- audit compares changes (status, reference, amount, currency, issue date),
-- and those updates already change the indexed status; the trigger below sets
-- it, so no writer can forget to. Existing rows take the migration's time:
-- the first audit run after it looks each of them up once.
ALTER TABLE invoicer.fiscal_documents ADD COLUMN audit_changed_at timestamptz NOT NULL DEFAULT now();

-- +goose StatementBegin
CREATE FUNCTION invoicer.stamp_audit_change() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
    NEW.audit_changed_at := now();
    RETURN NEW;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER fiscal_documents_audit_change BEFORE UPDATE ON invoicer.fiscal_documents
FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status
                   OR OLD.reference IS DISTINCT FROM NEW.reference
                   OR OLD.amount_minor IS DISTINCT FROM NEW.amount_minor
                   OR OLD.currency IS DISTINCT FROM NEW.currency
                   OR OLD.issue_date IS DISTINCT FROM NEW.issue_date)
EXECUTE FUNCTION invoicer.stamp_audit_change();

CREATE INDEX fiscal_documents_audit_changed ON invoicer.fiscal_documents (audit_changed_at, id);
DROP INDEX invoicer.fiscal_documents_updated_at;

-- +goose Down
CREATE INDEX fiscal_documents_updated_at ON invoicer.fiscal_documents (updated_at, id);
DROP INDEX invoicer.fiscal_documents_audit_changed;
DROP TRIGGER fiscal_documents_audit_change ON invoicer.fiscal_documents;
DROP FUNCTION invoicer.stamp_audit_change();
ALTER TABLE invoicer.fiscal_documents DROP COLUMN audit_changed_at;
