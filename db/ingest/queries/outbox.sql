-- name: OutboxRepublish :many
-- OutboxRepublish makes the rows of @keys that are not parked due again, so
-- that the relay publishes them once more (the reconciler's sweep asks it
-- for an event whose document is missing): unpublished, no attempts, due
-- now. It returns the keys it changed.
UPDATE ingest.outbox
SET published_at = NULL, attempts = 0, last_error = NULL, next_attempt_at = now()
WHERE event_key = ANY(@keys::text[]) AND parked_at IS NULL
RETURNING event_key;

-- name: OutboxParkedKeys :many
-- OutboxParkedKeys returns those of @keys whose row is parked.
SELECT event_key FROM ingest.outbox
WHERE event_key = ANY(@keys::text[]) AND parked_at IS NOT NULL;
