-- +goose Up
-- A receipt is written three times: inserted by the webhook, claimed by the
-- apply worker, finished done. Both updates change indexed columns
-- (next_attempt_at, status), so neither is HOT; but a new row version on the
-- old one's page is logged as the bytes that changed, while one sent to
-- another page (full pages, the default) logs the whole row, its body
-- included. Pages left half empty keep a receipt's later versions beside it
-- (page pruning frees the claim's version once the finish replaces it).
ALTER TABLE ingest.webhook_receipts SET (fillfactor = 50);

-- +goose Down
ALTER TABLE ingest.webhook_receipts RESET (fillfactor);
