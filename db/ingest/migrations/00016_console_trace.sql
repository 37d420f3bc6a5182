-- +goose Up
-- The console's trace looks a payment up by any of its identifiers; these
-- indexes keep each of those look-ups an index scan however many receipts,
-- refunds and outbox rows there are. Receipts are found by the prefix of
-- their dedupe key ("payment:<id>:"), compared in the C collation so the
-- range is byte order under any database collation, by their event id and
-- by the trace id inside their traceparent. Payments are found by their order
-- through payments_order, which 00009_poll_by_order already creates.
CREATE INDEX webhook_receipts_dedupe_c ON ingest.webhook_receipts ((dedupe_key COLLATE "C"));
CREATE INDEX webhook_receipts_event_id ON ingest.webhook_receipts (event_id) WHERE event_id <> '';
CREATE INDEX webhook_receipts_trace_id ON ingest.webhook_receipts ((split_part(traceparent, '-', 2))) WHERE traceparent <> '';
CREATE INDEX refunds_payment ON ingest.refunds (payment_id);

-- +goose Down
DROP INDEX ingest.refunds_payment;
DROP INDEX ingest.webhook_receipts_trace_id;
DROP INDEX ingest.webhook_receipts_event_id;
DROP INDEX ingest.webhook_receipts_dedupe_c;
