-- +goose NO TRANSACTION
-- +goose Up
-- A document's attempts are read a page at a time, newest first, by
-- (document_id, id); the new index also serves every look-up by document the
-- old one did. emission_attempts is the invoicer's largest table, so the
-- index is built without blocking the emitters' writes.
CREATE INDEX CONCURRENTLY IF NOT EXISTS emission_attempts_document_id ON invoicer.emission_attempts (document_id, id);
DROP INDEX CONCURRENTLY IF EXISTS invoicer.emission_attempts_document;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS emission_attempts_document ON invoicer.emission_attempts (document_id);
DROP INDEX CONCURRENTLY IF EXISTS invoicer.emission_attempts_document_id;
