-- +goose Up
-- A document's attempts are read a page at a time, newest first, by
-- (document_id, id); retention walks them by id.
CREATE INDEX emission_attempts_document_id ON invoicer.emission_attempts (document_id, id);
DROP INDEX invoicer.emission_attempts_document;

-- +goose Down
CREATE INDEX emission_attempts_document ON invoicer.emission_attempts (document_id);
DROP INDEX invoicer.emission_attempts_document_id;
