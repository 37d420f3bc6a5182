-- name: ReceiptInsert :execrows
-- A duplicate (same scope and dedupe key) inserts nothing and returns 0.
INSERT INTO ingest.webhook_receipts (source, scope, kind, dedupe_key, event_id, event_type, body, body_deflated, traceparent)
VALUES (@source, @scope, @kind, @dedupe_key, @event_id, @event_type, @body, @body_deflated, @traceparent)
ON CONFLICT (scope, dedupe_key) DO NOTHING;

-- name: ReceiptInsertMany :many
-- Inserts receipts of distinct scope and dedupe key in one statement and
-- returns the scope and dedupe key of each inserted; one whose key is held
-- already is left out. ON CONFLICT finds held keys through the unique
-- index whatever the statement's plan: a look-up in the statement (NOT
-- EXISTS) is planned, and the plan pgx's prepared statement settles on
-- while the table is new scans the whole table, and goes on scanning it as
-- the table grows, until autovacuum analyzes it. The confirmation each
-- row's speculative insert logs (48 bytes) is the price.
-- With a lease token the receipts are inserted claimed under it, for
-- lease_seconds: an apply worker of the inserting process takes them
-- from memory (store.Handoff), and no claim has to lock and update them.
INSERT INTO ingest.webhook_receipts (source, scope, kind, dedupe_key, event_id, event_type, body, body_deflated, traceparent,
                                     lease_token, lease_expires_at)
SELECT u.source, u.scope, u.kind, u.dedupe_key, u.event_id, u.event_type, u.body, u.body_deflated, u.traceparent,
       sqlc.narg(lease_token)::uuid,
       CASE WHEN sqlc.narg(lease_token)::uuid IS NOT NULL THEN now() + make_interval(secs => @lease_seconds::float8) END
FROM ROWS FROM (unnest(@sources::text[]), unnest(@scopes::text[]), unnest(@kinds::text[]),
                unnest(@dedupe_keys::text[]), unnest(@event_ids::text[]), unnest(@event_types::text[]),
                unnest(@bodies::bytea[]), unnest(@bodies_deflated::boolean[]), unnest(@traceparents::text[]))
    AS u(source, scope, kind, dedupe_key, event_id, event_type, body, body_deflated, traceparent)
ON CONFLICT (dedupe_key, scope) DO NOTHING
RETURNING id, scope, dedupe_key, received_at;

-- name: ReceiptClaimDue :many
-- Claims pending receipts that are due and not leased by a live worker; a
-- claimed receipt is due again when its lease ends. The claim sets no
-- indexed column, so it is a HOT update that writes no index entry: the
-- receipts other workers hold keep their place in the pending index, and a
-- claim's scan steps over them (at most the receipts in flight).
UPDATE ingest.webhook_receipts r
SET lease_token = @lease_token, lease_expires_at = now() + make_interval(secs => @lease_seconds::float8)
WHERE r.id IN (
    SELECT id FROM ingest.webhook_receipts
    WHERE status = 'pending' AND next_attempt_at <= now()
      AND (lease_expires_at IS NULL OR lease_expires_at < now())
    ORDER BY next_attempt_at, id
    LIMIT @max_rows
    FOR UPDATE SKIP LOCKED)
RETURNING r.id, r.source, r.scope, r.kind, r.event_id, r.event_type, r.attempts, r.body, r.body_deflated, r.received_at, r.traceparent;

-- name: ReceiptFinish :execrows
-- Ends a receipt as done or rejected; fenced by the claim's lease token.
UPDATE ingest.webhook_receipts
SET status = @status, last_error = @last_error, processed_at = now(),
    lease_token = NULL, lease_expires_at = NULL
WHERE id = @id AND lease_token = @lease_token;

-- name: ReceiptFinishDone :many
-- Ends applied receipts as done, the whole batch in one statement (an index
-- look-up of each id in the primary key however the table has grown);
-- fenced by the claim's lease token: a receipt another worker took over is
-- not among the ids returned.
UPDATE ingest.webhook_receipts
SET status = 'done', processed_at = now(), lease_token = NULL, lease_expires_at = NULL
WHERE id = ANY(@ids::bigint[]) AND lease_token = @lease_token
RETURNING id;

-- name: ReceiptRetryLater :execrows
-- Records a failed attempt: due again at next_attempt_at, or parked.
UPDATE ingest.webhook_receipts
SET attempts = attempts + 1, last_error = @last_error, next_attempt_at = @next_attempt_at,
    status = CASE WHEN @park::bool THEN 'parked' ELSE status END,
    lease_token = NULL, lease_expires_at = NULL
WHERE id = @id AND lease_token = @lease_token;

-- name: ReceiptListParked :many
-- Parked receipts for the operator, oldest first, keyset-paged by id. The
-- body is left out: it may hold personal data.
SELECT id, source, event_id, event_type, attempts, last_error, received_at
FROM ingest.webhook_receipts
WHERE status = 'parked' AND id > @after_id
ORDER BY id
LIMIT @max_rows;

-- name: ReceiptRetry :one
-- An operator sends a parked or rejected receipt back to the worker, with
-- its attempts reset. Returns the receipt's source and event id.
UPDATE ingest.webhook_receipts
SET status = 'pending', attempts = 0, next_attempt_at = now(), processed_at = NULL,
    lease_token = NULL, lease_expires_at = NULL
WHERE id = @id AND status IN ('parked', 'rejected')
RETURNING id, source, event_id, event_type;

-- name: ReceiptPrune :execrows
-- Deletes up to max_rows finished receipts received before the cutoff,
-- lowest id first, below the first receipt received at or after it: the
-- primary key reads only the receipts older than the retention, never the
-- history it keeps. A receipt committed late with a lower id than a newer
-- one is only pruned a run later; one an open case holds on to is kept.
DELETE FROM ingest.webhook_receipts
WHERE id IN (
    SELECT old.id FROM ingest.webhook_receipts old
    WHERE old.status IN ('done', 'rejected') AND old.received_at < @cutoff
      AND old.id < coalesce((SELECT n.id FROM ingest.webhook_receipts n WHERE n.received_at >= @cutoff
                             ORDER BY n.id LIMIT 1), 9223372036854775807)
      AND NOT EXISTS (SELECT 1 FROM ingest.cases c WHERE c.receipt_id = old.id AND c.closed_at IS NULL)
    ORDER BY old.id
    LIMIT @max_rows
    FOR UPDATE SKIP LOCKED);

-- name: ReceiptBacklog :one
-- Pending receipts and when the oldest of them arrived (unix seconds, 0
-- when none is pending).
SELECT count(*) AS pending, coalesce(extract(epoch FROM min(received_at)), 0)::float8 AS oldest_unix
FROM ingest.webhook_receipts
WHERE status = 'pending';

-- name: ReceiptCountsByStatus :many
-- Receipts per status, for the operator's pipeline status.
SELECT status, count(*) AS receipts
FROM ingest.webhook_receipts
GROUP BY status
ORDER BY status;

-- name: ReceiptRequeue :one
-- Sends a receipt back to the worker (an operator's reapply or replay),
-- whatever it ended as, with its attempts reset.
UPDATE ingest.webhook_receipts
SET status = 'pending', attempts = 0, next_attempt_at = now(), processed_at = NULL,
    lease_token = NULL, lease_expires_at = NULL
WHERE id = @id
RETURNING id;

-- name: ReceiptReleaseHandoff :execrows
-- Ends the claims of the pending receipts inserted claimed under a
-- handoff's token that its process stops without working (store.Handoff),
-- so the next claim takes them at once rather than when their lease ends.
UPDATE ingest.webhook_receipts
SET lease_token = NULL, lease_expires_at = NULL
WHERE lease_token = @lease_token AND status = 'pending';
