-- +goose Up
-- The W3C trace context of the billing event, so emitting the document
-- continues the payment's trace.
ALTER TABLE invoicer.fiscal_documents ADD COLUMN traceparent text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE invoicer.fiscal_documents DROP COLUMN traceparent;
