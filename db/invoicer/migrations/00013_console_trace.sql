-- +goose Up
-- The console's trace finds a document by its CFE series and number, and
-- the notifications of a document by the prefix of their event key
-- ("document:<reference>:"), compared in the C collation so the range is
-- byte order under any database collation; both stay index scans however
-- many documents there are.
CREATE INDEX fiscal_documents_series_number ON invoicer.fiscal_documents (provider_series, provider_number)
    WHERE provider_number IS NOT NULL;
CREATE INDEX outbox_event_key_c ON invoicer.outbox ((event_key COLLATE "C"));

-- +goose Down
DROP INDEX invoicer.outbox_event_key_c;
DROP INDEX invoicer.fiscal_documents_series_number;
