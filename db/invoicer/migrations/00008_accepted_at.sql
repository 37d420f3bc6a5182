-- +goose Up
-- When ingest accepted the payment or refund a document is for: the billing
-- event's occurred_at, which ingest sets as it applies the PSP's status. The
-- time-to-valid-document SLO (docs/slo.md) measures from it. NULL for rows
-- recorded before it was kept; a re-issue keeps its original's.
ALTER TABLE invoicer.fiscal_documents ADD COLUMN accepted_at timestamptz;

-- +goose Down
ALTER TABLE invoicer.fiscal_documents DROP COLUMN accepted_at;
