-- +goose Up
-- A rejected or refused document can be re-issued (docs/cases.md): the
-- corrected document is a new row of the same source and kind with the next
-- revision, a new reference, and replaces_id naming the row it replaces,
-- which is kept for the record. A billing event records revision 0 only, so
-- a redelivered event still finds its one original row. refusals counts the
-- provider's consecutive refusals of a send, for the document_refused case.
ALTER TABLE invoicer.fiscal_documents
    ADD COLUMN revision integer NOT NULL DEFAULT 0 CHECK (revision >= 0),
    ADD COLUMN replaces_id bigint REFERENCES invoicer.fiscal_documents (id),
    ADD COLUMN refusals integer NOT NULL DEFAULT 0,
    ADD CHECK ((revision = 0) = (replaces_id IS NULL));
ALTER TABLE invoicer.fiscal_documents DROP CONSTRAINT fiscal_documents_source_kind_source_ref_kind_key;
ALTER TABLE invoicer.fiscal_documents
    ADD CONSTRAINT fiscal_documents_source_revision UNIQUE (source_kind, source_ref, kind, revision);
-- At most one re-issue of each document.
CREATE UNIQUE INDEX fiscal_documents_replaces ON invoicer.fiscal_documents (replaces_id) WHERE replaces_id IS NOT NULL;

-- +goose Down
DROP INDEX invoicer.fiscal_documents_replaces;
ALTER TABLE invoicer.fiscal_documents DROP CONSTRAINT fiscal_documents_source_revision;
DELETE FROM invoicer.fiscal_documents WHERE revision > 0;
ALTER TABLE invoicer.fiscal_documents
    ADD CONSTRAINT fiscal_documents_source_kind_source_ref_kind_key UNIQUE (source_kind, source_ref, kind);
ALTER TABLE invoicer.fiscal_documents DROP COLUMN refusals, DROP COLUMN replaces_id, DROP COLUMN revision;
