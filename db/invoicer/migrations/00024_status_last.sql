-- +goose Up
-- A document's result (DocumentSaveResults) changes its status and the
-- provider's fields. PostgreSQL logs an updated row from its first changed
-- byte to its last, and status was the eighth column, ahead of the amount,
-- the buyer and the lines, which never change: every result logged the
-- whole row again, about 620 bytes. Moved behind every column that never
-- changes, a result logs about 290 (bench/README.md, where the WAL goes).
-- A column cannot be moved in place: this one is copied into a new last
-- column, and the old one dropped (it keeps a null slot in each row). The
-- copy updates every row once; on a large table, run it when little is
-- being written, and let autovacuum reclaim the old row versions after.
ALTER TABLE invoicer.fiscal_documents ADD COLUMN status_last text;
UPDATE invoicer.fiscal_documents SET status_last = status;
-- Drops the status check and the indexes that name status with it.
ALTER TABLE invoicer.fiscal_documents DROP COLUMN status;
ALTER TABLE invoicer.fiscal_documents RENAME COLUMN status_last TO status;
ALTER TABLE invoicer.fiscal_documents
    ALTER COLUMN status SET DEFAULT 'pending',
    ALTER COLUMN status SET NOT NULL,
    ADD CONSTRAINT fiscal_documents_status_check CHECK (status IN
        ('pending', 'unknown', 'pending_dgi', 'authorized', 'observed', 'issued',
         'rejected', 'voided', 'needs_attention'));
CREATE INDEX fiscal_documents_status ON invoicer.fiscal_documents (status, id);
CREATE INDEX fiscal_documents_due ON invoicer.fiscal_documents (due_at)
    WHERE status IN ('pending', 'unknown', 'pending_dgi');
CREATE INDEX fiscal_documents_created_at ON invoicer.fiscal_documents (created_at)
    WHERE issue_date IS NULL AND status IN ('pending_dgi', 'authorized', 'observed', 'issued', 'rejected');
-- The reconciler's column grant went with the old column (db/roles/roles.sql
-- grants it again on its next run).
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'onceflow_reconciler') THEN
        GRANT SELECT (status) ON invoicer.fiscal_documents TO onceflow_reconciler;
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- The column stays last: where it sits changes no query's result.
SELECT 1;
