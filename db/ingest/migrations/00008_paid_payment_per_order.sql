-- +goose Up
-- The apply worker checks that a PAID payment is the first on its order
-- (a second one opens an unmatched_payment case instead of a second
-- invoice); this index keeps that check a look-up however many payments
-- there are.
CREATE INDEX payments_order_paid ON ingest.payments (order_id) WHERE status = 'PAID';

-- +goose Down
DROP INDEX ingest.payments_order_paid;
