-- name: OrderInsert :one
INSERT INTO ingest.orders (merchant_order_id, customer_id, amount_minor, currency, lines, psp_payment_id)
VALUES (@merchant_order_id, @customer_id, @amount_minor, @currency, @lines, @psp_payment_id)
RETURNING *;

-- name: OrderGet :one
SELECT * FROM ingest.orders WHERE id = @id;

-- name: OrderGetByMerchantID :one
SELECT * FROM ingest.orders WHERE merchant_order_id = @merchant_order_id;

-- name: OrderSetPSPPayment :exec
-- Links the order to the PSP payment the first time it is seen.
UPDATE ingest.orders SET psp_payment_id = @psp_payment_id
WHERE id = @id AND psp_payment_id IS NULL;
