-- +goose Up
-- A document in a foreign currency keeps the exchange rate it is sent with
-- (TpoCambio, in thousandths), fixed the first time it is built so every
-- retry sends the same. 'observed' is DGI's acceptance with remarks: valid
-- for the buyer, a state of its own. invoicer.rates holds the UYU value of
-- currencies and of the UI (code UYI) by the date they apply on: loaded from
-- a file, or kept from BCU's answers.
ALTER TABLE invoicer.fiscal_documents
    ADD COLUMN exchange_rate_milli bigint CHECK (exchange_rate_milli > 0),
    DROP CONSTRAINT fiscal_documents_status_check,
    ADD CONSTRAINT fiscal_documents_status_check CHECK (status IN
        ('pending', 'unknown', 'pending_dgi', 'authorized', 'observed', 'issued',
         'rejected', 'voided', 'needs_attention'));

CREATE TABLE invoicer.rates (
    code       text NOT NULL CHECK (code ~ '^[A-Z]{3}$'),
    day        date NOT NULL,
    value      numeric(16, 6) NOT NULL CHECK (value > 0),
    source     text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (code, day)
);

-- +goose Down
DROP TABLE invoicer.rates;
UPDATE invoicer.fiscal_documents SET status = 'authorized' WHERE status = 'observed';
ALTER TABLE invoicer.fiscal_documents
    DROP CONSTRAINT fiscal_documents_status_check,
    ADD CONSTRAINT fiscal_documents_status_check CHECK (status IN
        ('pending', 'unknown', 'pending_dgi', 'authorized', 'issued',
         'rejected', 'voided', 'needs_attention')),
    DROP COLUMN exchange_rate_milli;
