-- name: OrderInsert :one
INSERT INTO ingest.orders (merchant_order_id, customer_id, amount_minor, currency, lines, psp_payment_id, recurring, psp_plan_id)
VALUES (@merchant_order_id, @customer_id, @amount_minor, @currency, @lines, @psp_payment_id, @recurring, @psp_plan_id)
RETURNING *;

-- name: OrderGet :one
SELECT * FROM ingest.orders WHERE id = @id;

-- name: OrderWithCustomerByMerchantID :one
-- The order a payment is for, with its buyer's fiscal profile, in one round
-- trip.
SELECT sqlc.embed(o), sqlc.embed(c) FROM ingest.orders o JOIN ingest.customers c ON c.id = o.customer_id
WHERE o.merchant_order_id = @merchant_order_id;

-- name: OrdersWithCustomerByMerchantIDs :many
-- OrderWithCustomerByMerchantID for many orders in one statement: those of
-- an apply batch's payments.
SELECT sqlc.embed(o), sqlc.embed(c) FROM ingest.orders o JOIN ingest.customers c ON c.id = o.customer_id
WHERE o.merchant_order_id = ANY(@merchant_order_ids::text[]);

-- name: OrderWithCustomerByPSPPaymentID :one
-- The order linked to a PSP payment, with its buyer: how a payment that
-- carries no order reference (a Stripe PaymentIntent without our metadata)
-- finds its order.
SELECT sqlc.embed(o), sqlc.embed(c) FROM ingest.orders o JOIN ingest.customers c ON c.id = o.customer_id
WHERE o.psp_payment_id = @psp_payment_id;

-- name: OrderWithCustomer :one
SELECT sqlc.embed(o), sqlc.embed(c) FROM ingest.orders o JOIN ingest.customers c ON c.id = o.customer_id
WHERE o.id = @id;

-- name: OrderSetPSPPayments :exec
-- Links orders to their PSP payments the first time each is seen, the whole
-- batch in one statement; of two links of one order the first listed wins,
-- as when each was its own statement.
UPDATE ingest.orders o SET psp_payment_id = l.psp_payment_id
FROM (SELECT DISTINCT ON (u.order_id) u.order_id, u.psp_payment_id
      FROM ROWS FROM (unnest(@order_ids::uuid[]), unnest(@psp_payment_ids::text[])) WITH ORDINALITY AS u(order_id, psp_payment_id, n)
      ORDER BY u.order_id, u.n) l
WHERE o.id = l.order_id AND o.psp_payment_id IS NULL;

-- name: OrderClaimDue :many
-- Orders due for a status poll: older than settle_before, not polled since
-- polled_before, and created after give_up_before, or after
-- paid_give_up_before once one of their payments is PAID (or charged
-- back) and they are not recurring (a subscription's next payment is
-- searched for until give_up_before). Each claimed order is stamped so another poller skips it; with it
-- come the ids of its known payments that have no final state (its linked
-- PSP payment included while it is not recorded) and, for a recurring
-- order, the ids of all its recorded payments and the PSP plan it names
-- (the subscriptions they name are listed at the PSP). The earlier of the
-- two give-ups bounds the scan of orders_created: the CASE alone leaves
-- every order ever created to be read.
UPDATE ingest.orders o
SET polled_at = now(), polls = polls + 1
WHERE o.id IN (
    SELECT ord.id FROM ingest.orders ord
    WHERE ord.created_at < @settle_before
      AND ord.created_at > least(@paid_give_up_before::timestamptz, @give_up_before::timestamptz)
      AND (ord.polled_at IS NULL OR ord.polled_at < @polled_before::timestamptz)
      AND ord.created_at > CASE
          WHEN NOT ord.recurring AND EXISTS (SELECT 1 FROM ingest.payments p WHERE p.order_id = ord.id AND p.status_rank >= 40)
          THEN @paid_give_up_before::timestamptz ELSE @give_up_before::timestamptz END
    ORDER BY ord.polled_at NULLS FIRST, ord.created_at
    LIMIT @max_rows
    FOR UPDATE OF ord SKIP LOCKED)
RETURNING o.id, o.merchant_order_id,
    (ARRAY(SELECT p.id FROM ingest.payments p WHERE p.order_id = o.id AND p.status_rank < 30 ORDER BY p.id)
     || CASE WHEN o.psp_payment_id IS NOT NULL
                  AND NOT EXISTS (SELECT 1 FROM ingest.payments p WHERE p.id = o.psp_payment_id)
             THEN ARRAY[o.psp_payment_id] ELSE ARRAY[]::text[] END)::text[] AS unsettled,
    ARRAY(SELECT p.id FROM ingest.payments p WHERE o.recurring AND p.order_id = o.id ORDER BY p.id)::text[] AS recurring_payments,
    o.psp_plan_id;

-- name: OrderClaimDueRecurring :many
-- Recurring orders created before give_up_before (younger ones are
-- OrderClaimDue's), not polled since polled_before, with a payment recorded
-- after recurring_give_up_before, or created after it when they name a PSP
-- plan: a subscription's later periods are looked for as long as it
-- charges, and its first as long as a later one would be. Stamped and
-- returned as OrderClaimDue's orders.
UPDATE ingest.orders o
SET polled_at = now(), polls = polls + 1
WHERE o.id IN (
    SELECT ord.id FROM ingest.orders ord
    WHERE ord.recurring
      AND ord.created_at <= @give_up_before
      AND (ord.polled_at IS NULL OR ord.polled_at < @polled_before::timestamptz)
      AND (EXISTS (SELECT 1 FROM ingest.payments p WHERE p.order_id = ord.id AND p.created_at > @recurring_give_up_before)
           OR (ord.psp_plan_id IS NOT NULL AND ord.created_at > @recurring_give_up_before))
    ORDER BY ord.polled_at NULLS FIRST
    LIMIT @max_rows
    FOR UPDATE OF ord SKIP LOCKED)
RETURNING o.id, o.merchant_order_id,
    ARRAY(SELECT p.id FROM ingest.payments p WHERE p.order_id = o.id AND p.status_rank < 30 ORDER BY p.id)::text[] AS unsettled,
    ARRAY(SELECT p.id FROM ingest.payments p WHERE p.order_id = o.id ORDER BY p.id)::text[] AS recurring_payments,
    o.psp_plan_id;

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
