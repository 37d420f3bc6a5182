-- +goose Up
-- The rest of the provider's CAE data on a document, for the buyer-facing
-- result (docs/notifications.md): the number range the CAE authorizes and
-- its expiry date. provider_cae already holds the CAE's id.
ALTER TABLE invoicer.fiscal_documents
    ADD COLUMN provider_cae_from    bigint,
    ADD COLUMN provider_cae_to      bigint,
    ADD COLUMN provider_cae_expires date;

-- +goose Down
ALTER TABLE invoicer.fiscal_documents
    DROP COLUMN provider_cae_expires, DROP COLUMN provider_cae_to, DROP COLUMN provider_cae_from;
