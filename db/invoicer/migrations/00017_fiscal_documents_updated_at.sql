-- +goose Up
-- Serves the reconciler's provider audit, which each run looks up only the
-- documents updated since its previous run (DocumentsAuditChanged).
CREATE INDEX fiscal_documents_updated_at ON invoicer.fiscal_documents (updated_at, id);

-- +goose Down
DROP INDEX invoicer.fiscal_documents_updated_at;
