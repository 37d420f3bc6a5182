-- name: IngestOutboxParked :many
-- Parked rows of ingest's outbox, as the outbox's operator API counts them
-- (served by the partial index outbox_parked, never the whole outbox). Read
-- through the read-only ingest connection.
SELECT event_key, event_type, coalesce(parked_reason, '')::text AS reason
FROM ingest.outbox
WHERE parked_at IS NOT NULL AND published_at IS NULL
ORDER BY id
LIMIT @max_rows;

-- name: InvoicerOutboxParked :many
-- Parked rows of the invoicer's outbox, as IngestOutboxParked's. Read
-- through the read-only invoicer connection.
SELECT event_key, event_type, coalesce(parked_reason, '')::text AS reason
FROM invoicer.outbox
WHERE parked_at IS NOT NULL AND published_at IS NULL
ORDER BY id
LIMIT @max_rows;

-- name: ReceiptsStuck :many
-- Receipts parked, pending since before @pending_before, or claimed by a
-- worker whose claim expired before @claim_expired_before. Never the body.
SELECT id, source, event_id, status, attempts,
       (lease_expires_at IS NOT NULL AND lease_expires_at < @claim_expired_before)::bool AS claim_expired
FROM ingest.webhook_receipts
WHERE status = 'parked'
   OR (status = 'pending' AND received_at < @pending_before)
   OR (status = 'pending' AND lease_expires_at < @claim_expired_before)
ORDER BY id
LIMIT @max_rows;

-- name: DocumentsStuck :many
-- Documents in needs_attention since before @attention_before, or claimed
-- by an emitter whose claim expired before @claim_expired_before. The
-- statuses not final are named, not the final ones excluded, so the scan is
-- of fiscal_documents_status's unfinished entries, never the history.
SELECT reference, status, coalesce(attention_reason, '')::text AS reason,
       (lease_expires_at IS NOT NULL AND lease_expires_at < @claim_expired_before)::bool AS claim_expired
FROM invoicer.fiscal_documents
WHERE (status = 'needs_attention' AND updated_at < @attention_before)
   OR (lease_expires_at < @claim_expired_before AND status IN ('pending', 'unknown', 'pending_dgi', 'needs_attention'))
ORDER BY id
LIMIT @max_rows;

-- name: RelayLeasesExpired :many
-- Relay leader leases that expired before @expired_before: no relay has
-- published that outbox since. Read through the relay connection.
SELECT name, holder, expires_at
FROM relay.leases
WHERE expires_at < @expired_before
ORDER BY name;
