-- +goose Up
-- The reconciler's provider audit reads documents by issue date, or by
-- creation time when they have none yet.
CREATE INDEX fiscal_documents_issue_date ON invoicer.fiscal_documents (issue_date);
CREATE INDEX fiscal_documents_created_at ON invoicer.fiscal_documents (created_at) WHERE issue_date IS NULL;
-- The relay's retention deletes published rows oldest first, and its
-- operators list parked rows.
CREATE INDEX outbox_published ON invoicer.outbox (published_at) WHERE published_at IS NOT NULL;
CREATE INDEX outbox_parked ON invoicer.outbox (id) WHERE parked_at IS NOT NULL AND published_at IS NULL;

-- +goose Down
DROP INDEX invoicer.outbox_parked, invoicer.outbox_published;
DROP INDEX invoicer.fiscal_documents_created_at;
DROP INDEX invoicer.fiscal_documents_issue_date;
