-- name: DeliveryInsert :exec
-- Queues one delivery of an event; a redelivered event queues nothing.
INSERT INTO ingest.notification_deliveries (event_id, event_type, payload)
VALUES (@event_id, @event_type, @payload)
ON CONFLICT (event_id) DO NOTHING;

-- name: DeliveryClaimDue :many
-- Claims due deliveries not leased by a live deliverer.
UPDATE ingest.notification_deliveries d
SET lease_token = @lease_token, lease_expires_at = now() + make_interval(secs => @lease_seconds::float8)
WHERE d.id IN (
    SELECT id FROM ingest.notification_deliveries
    WHERE status = 'pending' AND next_attempt_at <= now()
      AND (lease_expires_at IS NULL OR lease_expires_at < now())
    ORDER BY next_attempt_at, id
    LIMIT @max_rows
    FOR UPDATE SKIP LOCKED)
RETURNING d.*;

-- name: DeliveryMarkDelivered :execrows
UPDATE ingest.notification_deliveries
SET status = 'delivered', attempts = attempts + 1, delivered_at = now(), last_error = NULL,
    lease_token = NULL, lease_expires_at = NULL
WHERE id = @id AND lease_token = @lease_token;

-- name: DeliveryMarkFailed :one
-- Counts a failed attempt: retried @retry_in_seconds from now, or parked
-- when @park (the attempts are exhausted or the merchant said 410 Gone).
UPDATE ingest.notification_deliveries
SET attempts = attempts + 1, last_error = @last_error,
    status = CASE WHEN @park::bool THEN 'parked' ELSE 'pending' END,
    parked_at = CASE WHEN @park::bool THEN now() END,
    next_attempt_at = now() + make_interval(secs => @retry_in_seconds::float8),
    lease_token = NULL, lease_expires_at = NULL
WHERE id = @id AND lease_token = @lease_token
RETURNING status;

-- name: DeliveryAttemptInsert :exec
INSERT INTO ingest.notification_attempts (delivery_id, http_status, error, latency_ms)
VALUES (@delivery_id, @http_status, @error, @latency_ms);

-- name: DeliveryReplay :execrows
-- An operator's replay: the delivery is sent again now, with its attempts
-- counted afresh, whether it was parked or already delivered.
UPDATE ingest.notification_deliveries
SET status = 'pending', attempts = 0, next_attempt_at = now(), parked_at = NULL, delivered_at = NULL,
    lease_token = NULL, lease_expires_at = NULL,
    replayed_by = @actor, replay_reason = @reason, replayed_at = now()
WHERE id = @id AND status IN ('parked', 'delivered');

-- name: DeliveryGet :one
SELECT * FROM ingest.notification_deliveries WHERE id = @id;

-- name: DeliveryList :many
-- One page of deliveries, newest first, optionally of one status.
SELECT * FROM ingest.notification_deliveries
WHERE (sqlc.narg(status)::text IS NULL OR status = sqlc.narg(status)) AND (@before_id::bigint = 0 OR id < @before_id)
ORDER BY id DESC
LIMIT @max_rows;

-- name: DeliveryAttempts :many
SELECT * FROM ingest.notification_attempts WHERE delivery_id = @delivery_id ORDER BY id;

-- name: DeliveryCountOpen :many
-- Open deliveries (pending, parked) per status, through the partial index
-- notification_deliveries_queue: the cost follows the open rows, not the
-- delivered history.
SELECT status, count(*)::bigint AS deliveries FROM ingest.notification_deliveries
WHERE status <> 'delivered' GROUP BY status ORDER BY status;

-- name: DeliveryPrune :execrows
-- Deletes up to max_rows notifications delivered before the cutoff, with
-- their attempts; pending and parked ones stay.
DELETE FROM ingest.notification_deliveries
WHERE id IN (
    SELECT old.id FROM ingest.notification_deliveries old
    WHERE old.status = 'delivered' AND old.delivered_at < @cutoff::timestamptz
    ORDER BY old.delivered_at
    LIMIT @max_rows
    FOR UPDATE SKIP LOCKED);
