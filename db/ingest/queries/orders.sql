-- name: OrderInsert :one
INSERT INTO ingest.orders (merchant_order_id, customer_id, amount_minor, currency, lines, psp_payment_id)
VALUES (@merchant_order_id, @customer_id, @amount_minor, @currency, @lines, @psp_payment_id)
RETURNING *;

-- name: OrderGet :one
SELECT * FROM ingest.orders WHERE id = @id;

-- name: OrderWithCustomerByMerchantID :one
-- The order a payment is for, with its buyer's fiscal profile, in one round
-- trip.
SELECT sqlc.embed(o), sqlc.embed(c) FROM ingest.orders o JOIN ingest.customers c ON c.id = o.customer_id
WHERE o.merchant_order_id = @merchant_order_id;

-- name: OrderWithCustomer :one
SELECT sqlc.embed(o), sqlc.embed(c) FROM ingest.orders o JOIN ingest.customers c ON c.id = o.customer_id
WHERE o.id = @id;

-- name: OrderSetPSPPayment :batchexec
-- Links orders to their PSP payments the first time each is seen, in one
-- round trip.
UPDATE ingest.orders SET psp_payment_id = @psp_payment_id
WHERE id = @id AND psp_payment_id IS NULL;

-- name: OrderClaimUnsettled :many
-- Orders with a PSP payment id whose payment is not in a final state,
-- older than settle_after and not polled within poll_every, created after
-- give_up_before; each claimed order is stamped so another poller skips it.
UPDATE ingest.orders o
SET polled_at = now(), polls = polls + 1
WHERE o.id IN (
    SELECT ord.id FROM ingest.orders ord
    LEFT JOIN ingest.payments p ON p.id = ord.psp_payment_id
    WHERE ord.psp_payment_id IS NOT NULL
      AND (p.id IS NULL OR p.status_rank < 30)
      AND ord.created_at < @settle_before AND ord.created_at > @give_up_before
      AND (ord.polled_at IS NULL OR ord.polled_at < @polled_before)
    ORDER BY ord.polled_at NULLS FIRST, ord.created_at
    LIMIT @max_rows
    FOR UPDATE OF ord SKIP LOCKED)
RETURNING o.id, o.merchant_order_id, o.psp_payment_id;

-- name: OrderList :many
SELECT * FROM ingest.orders
WHERE (created_at, id) > (@after_created, @after_id::uuid)
ORDER BY created_at, id
LIMIT @max_rows;

-- name: OrderLock :one
-- Locks an order an operator amends until the transaction ends.
SELECT * FROM ingest.orders WHERE id = @id FOR UPDATE;

-- name: OrderAmend :one
-- An operator's amendment of an order's amount, currency, lines and PSP
-- payment.
UPDATE ingest.orders
SET amount_minor = @amount_minor, currency = @currency, lines = @lines, psp_payment_id = @psp_payment_id
WHERE id = @id
RETURNING *;
