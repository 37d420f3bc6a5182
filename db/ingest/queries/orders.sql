-- name: OrderInsert :one
-- The id is a UUIDv7 minted by the store (newID). An order naming a PSP
-- payment already recorded (for another order: no payment is recorded
-- without its order) inserts nothing and returns no row.
INSERT INTO ingest.orders (id, merchant_order_id, customer_id, amount_minor, currency, lines, psp_payment_id, recurring, psp_plan_id, next_poll_at)
SELECT @id, @merchant_order_id, @customer_id, @amount_minor, @currency, @lines, sqlc.narg(psp_payment_id)::text, @recurring, sqlc.narg(psp_plan_id)::text, @next_poll_at
WHERE NOT EXISTS (SELECT 1 FROM ingest.payments p WHERE p.id = sqlc.narg(psp_payment_id)::text)
RETURNING *;

-- name: OrderGet :one
-- An order with the id of the first payment recorded for it ('' before
-- any): the order's PSP payment when it was created or amended with none.
SELECT sqlc.embed(o),
       coalesce((SELECT p.id FROM ingest.payments p WHERE p.order_id = o.id ORDER BY p.created_at, p.id LIMIT 1), '')::text AS first_payment_id
FROM ingest.orders o WHERE o.id = @id;

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
-- The order of a PSP payment, with its buyer: the order created or amended
-- with that payment, or the one it is recorded for. How a payment that
-- carries no order reference (a Stripe PaymentIntent without our metadata)
-- finds its order.
SELECT sqlc.embed(o), sqlc.embed(c) FROM ingest.orders o JOIN ingest.customers c ON c.id = o.customer_id
WHERE o.psp_payment_id = @psp_payment_id
   OR o.id = (SELECT p.order_id FROM ingest.payments p WHERE p.id = @psp_payment_id)
LIMIT 1;

-- name: OrderWithCustomer :one
SELECT sqlc.embed(o), sqlc.embed(c) FROM ingest.orders o JOIN ingest.customers c ON c.id = o.customer_id
WHERE o.id = @id;

-- name: OrderClaimDue :many
-- Orders whose next poll is due by now, the earliest due first, through
-- orders_next_poll: a claim reads the orders it takes. A taken order is
-- polled while it is younger than its give-up: created after
-- give_up_before, or after paid_give_up_before once one of its payments is
-- PAID (or charged back) and it is not recurring (a subscription's next
-- payment is searched for until give_up_before). Its next poll comes a
-- period later, every_seconds doubled at each poll it had up to
-- every_max_seconds, if it is still younger than its give-up then, and
-- never otherwise (it leaves the index); an order taken already past its
-- give-up only leaves the schedule and is not returned. A polled order is
-- stamped and comes with the ids of its known payments that have no final
-- state (its linked PSP payment included while it is not recorded) and, for
-- a recurring order, the ids of all its recorded payments and the PSP plan
-- it names (the subscriptions they name are listed at the PSP); those are
-- read for the orders returned only, not for those leaving the schedule.
-- Every look-up of a taken order is a probe by its id, whatever the batch:
-- as EXISTS and NOT EXISTS, and with the update joined on the id alone, the
-- planner, expecting a batch of a thousand orders, hashed every paid
-- payment and every order instead, each look reading the whole history.
WITH taken AS (
    SELECT ord.id, ord.created_at, ord.recurring,
           least(power(2, least(ord.polls, 20)) * sqlc.arg(every_seconds)::float8, sqlc.arg(every_max_seconds)::float8) * interval '1 second' AS period
    FROM ingest.orders ord
    WHERE ord.next_poll_at <= sqlc.arg(now)::timestamptz
    ORDER BY ord.next_poll_at
    LIMIT sqlc.arg(max_rows)
    FOR UPDATE OF ord SKIP LOCKED
), paid AS MATERIALIZED (
    SELECT t.id, t.created_at, t.created_at - t.period AS created_period_before, t.period,
           NOT t.recurring AND coalesce((SELECT true FROM ingest.payments p WHERE p.order_id = t.id AND p.status_rank >= 40 LIMIT 1), false) AS paid
    FROM taken t
), due AS (
    SELECT t.id, t.period,
           t.created_at > CASE WHEN t.paid THEN sqlc.arg(paid_give_up_before)::timestamptz ELSE sqlc.arg(give_up_before)::timestamptz END AS live,
           t.created_period_before > CASE WHEN t.paid THEN sqlc.arg(paid_give_up_before)::timestamptz ELSE sqlc.arg(give_up_before)::timestamptz END AS stays
    FROM paid t
), claimed AS (
    UPDATE ingest.orders o
    SET next_poll_at = CASE WHEN d.stays THEN sqlc.arg(now)::timestamptz + d.period END,
        polled_at = CASE WHEN d.live THEN now() ELSE o.polled_at END,
        polls = o.polls + d.live::int
    FROM due d
    WHERE o.id = d.id AND o.id = ANY (ARRAY(SELECT t.id FROM taken t))
    RETURNING d.live, o.id, o.merchant_order_id, o.psp_payment_id, o.recurring, o.psp_plan_id
)
SELECT c.id, c.merchant_order_id,
    (ARRAY(SELECT p.id FROM ingest.payments p WHERE p.order_id = c.id AND p.status_rank < 30 ORDER BY p.id)
     || CASE WHEN c.psp_payment_id IS NOT NULL
                  AND (SELECT true FROM ingest.payments p WHERE p.id = c.psp_payment_id LIMIT 1) IS NULL
             THEN ARRAY[c.psp_payment_id] ELSE ARRAY[]::text[] END)::text[] AS unsettled,
    ARRAY(SELECT p.id FROM ingest.payments p WHERE c.recurring AND p.order_id = c.id ORDER BY p.id)::text[] AS recurring_payments,
    c.psp_plan_id
FROM claimed c
WHERE c.live;

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
-- A page of orders, each with its first payment (as OrderGet).
SELECT sqlc.embed(o),
       coalesce((SELECT p.id FROM ingest.payments p WHERE p.order_id = o.id ORDER BY p.created_at, p.id LIMIT 1), '')::text AS first_payment_id
FROM ingest.orders o
WHERE (o.created_at, o.id) > (@after_created, @after_id::uuid)
ORDER BY o.created_at, o.id
LIMIT @max_rows;

-- name: OrderLock :one
-- Locks an order an operator amends until the transaction ends; with its
-- first payment (as OrderGet).
SELECT sqlc.embed(o),
       coalesce((SELECT p.id FROM ingest.payments p WHERE p.order_id = o.id ORDER BY p.created_at, p.id LIMIT 1), '')::text AS first_payment_id
FROM ingest.orders o WHERE o.id = @id FOR UPDATE OF o;

-- name: OrderAmend :one
-- An operator's amendment of an order's amount, currency, lines and PSP
-- payment.
UPDATE ingest.orders
SET amount_minor = @amount_minor, currency = @currency, lines = @lines, psp_payment_id = @psp_payment_id
WHERE id = @id
RETURNING *;

-- name: OrderPollEarliestDue :one
-- When the earliest scheduled order poll is due (unix seconds, 0 when no
-- order is on the schedule): one step into orders_next_poll.
SELECT coalesce(extract(epoch FROM min(next_poll_at)), 0)::float8 AS earliest_unix
FROM ingest.orders
WHERE next_poll_at IS NOT NULL;
