-- +goose Up
-- Two indexes held every document twice, once as recorded and once as
-- accepted, where their reads need only one of the two (bench/README.md,
-- where the WAL goes):
--
-- fiscal_documents_status serves the open documents' counts and a listing of
-- one status; the accepted ones (most of the table) are listed through the
-- primary key, newest first, where they are the rows found first. It now
-- leaves them out.
DROP INDEX invoicer.fiscal_documents_status;
CREATE INDEX fiscal_documents_status ON invoicer.fiscal_documents (status, id)
    WHERE status NOT IN ('authorized', 'observed', 'issued');

-- fiscal_documents_audit_changed serves the provider audit, which compares
-- only documents the provider acknowledged; a pending document is not one.
DROP INDEX invoicer.fiscal_documents_audit_changed;
CREATE INDEX fiscal_documents_audit_changed ON invoicer.fiscal_documents (audit_changed_at, id)
    WHERE status IN ('pending_dgi', 'authorized', 'observed', 'issued', 'rejected');

-- +goose Down
DROP INDEX invoicer.fiscal_documents_audit_changed;
CREATE INDEX fiscal_documents_audit_changed ON invoicer.fiscal_documents (audit_changed_at, id);
DROP INDEX invoicer.fiscal_documents_status;
CREATE INDEX fiscal_documents_status ON invoicer.fiscal_documents (status, id);
