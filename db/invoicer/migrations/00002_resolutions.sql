-- +goose Up
-- Every operator decision on a document parked in needs_attention: who
-- decided what, and why.
CREATE TABLE invoicer.document_resolutions (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    document_id bigint NOT NULL REFERENCES invoicer.fiscal_documents (id),
    action      text NOT NULL CHECK (action IN ('adopt', 'retry', 'void')),
    actor       text NOT NULL CHECK (actor <> ''),
    reason      text NOT NULL CHECK (reason <> ''),
    from_status text NOT NULL,
    to_status   text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX document_resolutions_document ON invoicer.document_resolutions (document_id);
CREATE INDEX fiscal_documents_status ON invoicer.fiscal_documents (status, id);

-- +goose Down
DROP INDEX invoicer.fiscal_documents_status;
DROP TABLE invoicer.document_resolutions;
