-- +goose NO TRANSACTION
-- +goose Up
-- The reconciler's sweep asks, a page of payments at a time, which of them
-- have a valid document: a probe of (source_kind, source_ref, kind) for each
-- and a read of the document's status. PSP ids are random, so each probe
-- lands on a page of the table no recent read has touched, and the longer
-- the history the fewer of those pages are in memory. Carrying the status
-- in the unique index lets the answer come from the index alone for every
-- document whose page vacuum has marked all-visible, which is all of the
-- history but the last minutes. Every status change already writes a new
-- entry in this index (status is in other indexes' predicates, so no update
-- of it is HOT), so the wider entry costs no extra write. Built without
-- blocking the writers, then swapped in under the constraint's name in one
-- short ALTER; a build that failed half way is dropped first.
DROP INDEX CONCURRENTLY IF EXISTS invoicer.fiscal_documents_source_revision_status;
CREATE UNIQUE INDEX CONCURRENTLY fiscal_documents_source_revision_status
    ON invoicer.fiscal_documents (source_kind, source_ref, kind, revision) INCLUDE (status);
ALTER TABLE invoicer.fiscal_documents
    DROP CONSTRAINT fiscal_documents_source_revision,
    ADD CONSTRAINT fiscal_documents_source_revision UNIQUE USING INDEX fiscal_documents_source_revision_status;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS invoicer.fiscal_documents_source_revision_plain;
CREATE UNIQUE INDEX CONCURRENTLY fiscal_documents_source_revision_plain
    ON invoicer.fiscal_documents (source_kind, source_ref, kind, revision);
ALTER TABLE invoicer.fiscal_documents
    DROP CONSTRAINT fiscal_documents_source_revision,
    ADD CONSTRAINT fiscal_documents_source_revision UNIQUE USING INDEX fiscal_documents_source_revision_plain;
