-- +goose Up
-- The W3C trace context of the webhook request, so applying the receipt
-- continues its trace.
ALTER TABLE ingest.webhook_receipts ADD COLUMN traceparent text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE ingest.webhook_receipts DROP COLUMN traceparent;
