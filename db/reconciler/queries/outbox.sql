-- name: OutboxGetByEventKey :one
-- OutboxGetByEventKey returns the original event announced under @event_key,
-- to publish it again; pgx.ErrNoRows when ingest never wrote it. Read through
-- the read-only ingest connection.
SELECT event_key, event_type, payload, traceparent
FROM ingest.outbox
WHERE event_key = @event_key;
