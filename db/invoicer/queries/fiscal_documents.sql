-- name: DocumentRecordMany :many
-- Records the documents billing events ask for, of distinct sources, all in
-- one statement, in the order given; a redelivered event inserts nothing and
-- returns no row. It looks recorded sources up rather than saying ON
-- CONFLICT, which logs a confirmation record for every row: a source
-- recorded by another transaction meanwhile fails the statement with a
-- unique violation, and the caller records each event alone.
-- @docs is a JSON array of objects keyed by the names below. Each document
-- takes the first of its candidates that no other source's document holds
-- in the table: the caller gives this statement no two documents of
-- different sources sharing a candidate, which it could not see (it sees
-- the table as it was before it began). Each source is looked up on its
-- own, a probe of the unique index (a lateral subquery with LIMIT is never
-- made a join): as NOT EXISTS, the planner, which expects a hundred rows
-- from the JSON, read every document of revision 0 once a statement
-- while the table held a few thousand. With a lease token the documents
-- are recorded claimed under it for lease_seconds, as DocumentClaimDue
-- would claim them (an emission worker of the recording process takes
-- them from memory: store.Handoff), and each comes with the database's
-- clock.
INSERT INTO invoicer.fiscal_documents AS d
    (source_kind, source_ref, kind, event_key, reference, cfe_type, amount_minor, currency,
     buyer, lines, original_source_ref, traceparent, accepted_at, lease_token, lease_expires_at, attempts)
SELECT n.source_kind, n.source_ref, n.kind, n.event_key,
       (SELECT c.ref FROM unnest(n.candidates) WITH ORDINALITY AS c(ref, i)
        WHERE NOT EXISTS (
            SELECT 1 FROM invoicer.fiscal_documents o
            WHERE o.reference = c.ref
              AND NOT (o.source_kind = n.source_kind AND o.source_ref = n.source_ref AND o.kind = n.kind))
        ORDER BY c.i LIMIT 1),
       n.cfe_type, n.amount_minor, n.currency, n.buyer, n.lines, n.original_source_ref, n.traceparent, n.accepted_at,
       sqlc.narg(lease_token)::uuid,
       CASE WHEN sqlc.narg(lease_token)::uuid IS NOT NULL THEN now() + make_interval(secs => @lease_seconds::float8) END,
       (sqlc.narg(lease_token)::uuid IS NOT NULL)::int
FROM ROWS FROM (jsonb_to_recordset(@docs::jsonb) AS (source_kind text, source_ref text, kind text, event_key text,
    candidates text[], cfe_type integer, amount_minor bigint, currency text, buyer jsonb, lines jsonb,
    original_source_ref text, traceparent text, accepted_at timestamptz))
    WITH ORDINALITY AS n(source_kind, source_ref, kind, event_key, candidates, cfe_type, amount_minor, currency,
                         buyer, lines, original_source_ref, traceparent, accepted_at, position)
LEFT JOIN LATERAL (SELECT 1 AS held FROM invoicer.fiscal_documents o
                   WHERE o.source_kind = n.source_kind AND o.source_ref = n.source_ref AND o.kind = n.kind
                     AND o.revision = 0
                   LIMIT 1) AS recorded ON true
WHERE recorded.held IS NULL
ORDER BY n.position
RETURNING sqlc.embed(d), now()::timestamptz AS db_now;

-- name: DocumentClaimDue :many
-- Claims due documents not leased by a live worker; every later write must
-- present the returned lease token. Each row comes with the database's
-- clock (db_now), the one clock the emission loop compares with the
-- documents' times. A claim leaves updated_at alone: that is when the
-- document's state last changed, and each column the update leaves alone
-- between those it sets is WAL it does not write.
UPDATE invoicer.fiscal_documents d
SET lease_token = @lease_token, lease_expires_at = now() + make_interval(secs => @lease_seconds::float8),
    attempts = d.attempts + 1
WHERE d.id IN (
    SELECT id FROM invoicer.fiscal_documents
    WHERE status IN ('pending', 'unknown', 'pending_dgi') AND due_at <= now()
      AND (lease_expires_at IS NULL OR lease_expires_at < now())
    ORDER BY due_at, id
    LIMIT @max_rows
    FOR UPDATE SKIP LOCKED)
RETURNING sqlc.embed(d), now()::timestamptz AS db_now;

-- name: DocumentGetInvoiceOf :one
-- The invoice recorded for a payment, which a credit note must reference:
-- its latest revision (a re-issue replaces a rejected or refused one).
SELECT * FROM invoicer.fiscal_documents
WHERE source_kind = 'payment' AND source_ref = @payment_ref AND kind = 'invoice'
ORDER BY revision DESC
LIMIT 1;

-- name: DocumentSaveResults :many
-- Saves attempts' results, all in one statement; each only while the
-- caller's lease is still held and nobody (a provider event, an operator)
-- changed the status meanwhile: the ids returned are the results saved, a
-- result refused returns none. @results is a JSON array of objects keyed
-- by the names below, of distinct ids (one statement cannot update a row
-- twice); a missing or null field is NULL. Times are the database's: due
-- due_in_seconds from now(), and unknown since now() when
-- unknown_since_now. @ids are the results' ids again: the rows are found
-- through the primary key with them, where a join with the JSON, which the
-- planner expects to hold a hundred rows, read the whole table while it
-- held a few thousand documents.
UPDATE invoicer.fiscal_documents d
SET status = r.status, provider_series = r.provider_series, provider_number = r.provider_number,
    provider_status = r.provider_status, provider_cae = r.provider_cae,
    provider_security_code = r.provider_security_code, provider_url = r.provider_url,
    provider_cae_from = r.provider_cae_from, provider_cae_to = r.provider_cae_to,
    provider_cae_expires = r.provider_cae_expires, issue_date = r.issue_date,
    unknown_since = CASE WHEN r.unknown_since_now THEN now() ELSE r.unknown_since END,
    due_at = now() + make_interval(secs => r.due_in_seconds),
    dgi_polls = r.dgi_polls, last_error = r.last_error, attention_reason = r.attention_reason,
    refusals = CASE WHEN r.refused THEN d.refusals + 1 WHEN r.unavailable THEN d.refusals ELSE 0 END,
    lease_token = NULL, lease_expires_at = NULL, updated_at = now(),
    audit_changed_at = CASE WHEN d.status IS DISTINCT FROM r.status OR d.issue_date IS DISTINCT FROM r.issue_date
                            THEN now() ELSE d.audit_changed_at END
FROM jsonb_to_recordset(@results::jsonb) AS r(id bigint, lease_token uuid, claimed_status text, status text,
    provider_series text, provider_number bigint, provider_status text, provider_cae text,
    provider_security_code text, provider_url text, provider_cae_from bigint, provider_cae_to bigint,
    provider_cae_expires date, issue_date date, unknown_since timestamptz, unknown_since_now boolean,
    due_in_seconds float8, dgi_polls integer, last_error text, attention_reason text, refused boolean,
    unavailable boolean)
WHERE d.id = ANY(@ids::bigint[]) AND d.id = r.id AND d.lease_token = r.lease_token AND d.status = r.claimed_status
RETURNING d.id;

-- name: DocumentCountByStatus :many
SELECT status, count(*)::bigint AS documents FROM invoicer.fiscal_documents GROUP BY status ORDER BY status;

-- name: DocumentCountUpTo :one
-- How many documents there are, counting no further than @cap: a scan of at
-- most @cap rows, whatever the table's size.
SELECT count(*)::bigint FROM (SELECT 1 FROM invoicer.fiscal_documents LIMIT @cap::bigint) AS capped;

-- name: DocumentCountOpen :many
-- Documents in each status that is not final, read from the
-- fiscal_documents_status index over those statuses only: its cost follows
-- the open work, not the table's history.
SELECT status, count(*)::bigint AS documents FROM invoicer.fiscal_documents
WHERE status IN ('pending', 'unknown', 'pending_dgi', 'needs_attention')
GROUP BY status ORDER BY status;

-- name: DocumentStatusEstimates :one
-- The planner's statistics of the status column, kept by ANALYZE
-- (autovacuum): the table's estimated rows and each common status's share
-- of them. A catalog lookup; no scan of the table. No row before the first
-- ANALYZE.
SELECT c.reltuples::float8 AS rows, s.most_common_vals::text::text[] AS statuses,
       s.most_common_freqs::float8[] AS shares
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
JOIN pg_catalog.pg_stats s ON s.schemaname = n.nspname AND s.tablename = c.relname AND s.attname = 'status'
WHERE n.nspname = 'invoicer' AND c.relname = 'fiscal_documents' AND c.reltuples > 0;

-- name: DocumentDueStats :one
-- How many documents are due for an attempt and since when the oldest is.
SELECT count(*)::bigint AS due, coalesce(min(due_at), now())::timestamptz AS oldest_due_at
FROM invoicer.fiscal_documents
WHERE status IN ('pending', 'unknown', 'pending_dgi') AND due_at <= now();

-- name: DocumentCreditedUpTo :one
-- The amount credited on a payment by its credit notes recorded up to and
-- including document @id, leaving out rejected and voided ones.
SELECT coalesce(sum(amount_minor), 0)::bigint FROM invoicer.fiscal_documents
WHERE kind = 'credit_note' AND original_source_ref = @payment_ref AND id <= @id
  AND status NOT IN ('rejected', 'voided');

-- name: DocumentGet :one
SELECT * FROM invoicer.fiscal_documents WHERE id = @id;

-- name: DocumentGetByReference :one
SELECT * FROM invoicer.fiscal_documents WHERE reference = @reference;

-- name: DocumentList :many
-- One page of documents, newest first, optionally of one status.
SELECT * FROM invoicer.fiscal_documents
WHERE (sqlc.narg(status)::text IS NULL OR status = sqlc.narg(status)) AND (@before_id::bigint = 0 OR id < @before_id)
ORDER BY id DESC
LIMIT @max_rows;

-- name: DocumentAdoptStatus :execrows
-- Moves a document forward to the provider's status (from a provider event
-- or an operator), only if its status is still @from_status; any lease is
-- void from then on.
UPDATE invoicer.fiscal_documents
SET status = @status, provider_status = coalesce(sqlc.narg(provider_status), provider_status),
    provider_series = coalesce(sqlc.narg(provider_series), provider_series),
    provider_number = coalesce(sqlc.narg(provider_number), provider_number),
    provider_cae = coalesce(sqlc.narg(provider_cae), provider_cae),
    provider_security_code = coalesce(sqlc.narg(provider_security_code), provider_security_code),
    provider_url = coalesce(sqlc.narg(provider_url), provider_url),
    provider_cae_from = coalesce(sqlc.narg(provider_cae_from), provider_cae_from),
    provider_cae_to = coalesce(sqlc.narg(provider_cae_to), provider_cae_to),
    provider_cae_expires = coalesce(sqlc.narg(provider_cae_expires)::date, provider_cae_expires),
    issue_date = coalesce(sqlc.narg(issue_date), issue_date),
    attention_reason = NULL, lease_token = NULL, lease_expires_at = NULL, due_at = now(), updated_at = now(),
    audit_changed_at = CASE WHEN status IS DISTINCT FROM @status OR issue_date IS DISTINCT FROM coalesce(sqlc.narg(issue_date), issue_date)
                            THEN now() ELSE audit_changed_at END
WHERE id = @id AND status = @from_status;

-- name: DocumentMakeDue :execrows
-- Asks the emission loop to look at a document now (a provider event said
-- something about it), if it is still @from_status.
UPDATE invoicer.fiscal_documents SET due_at = now(), updated_at = now()
WHERE id = @id AND status = @from_status;

-- name: DocumentRetry :execrows
-- Puts a parked document back in the emission loop as never sent: the
-- operator has checked the provider. With look-up it is still looked up
-- before anything is sent.
UPDATE invoicer.fiscal_documents
SET status = 'pending', due_at = now(), attention_reason = NULL, last_error = NULL, unknown_since = NULL,
    lease_token = NULL, lease_expires_at = NULL, updated_at = now(), audit_changed_at = now()
WHERE id = @id AND status = 'needs_attention';

-- name: DocumentRenewLease :execrows
-- Gives a claimed document a full lease again just before a worker starts
-- on it; 0 rows means the claim was lost.
UPDATE invoicer.fiscal_documents
SET lease_expires_at = now() + make_interval(secs => @lease_seconds::float8)
WHERE id = @id AND lease_token = @lease_token;

-- name: DocumentMarkSending :many
-- Records, just before a round's sends, that each may be in flight: should
-- the worker die before saving the outcome, the next attempt treats the send
-- as unknown and waits the settle window before any resend. It gives each
-- marked document a full lease again, for the sends queued before its own.
-- The ids returned are those marked; one missing lost its claim or its
-- status changed, and must not be sent. Like a claim, it leaves updated_at
-- alone (unknown_since says when). The rows are found through the primary
-- key with = ANY (see DocumentSaveResults).
UPDATE invoicer.fiscal_documents d
SET unknown_since = now(), lease_expires_at = now() + make_interval(secs => @lease_seconds::float8)
FROM unnest(@ids::bigint[]) WITH ORDINALITY AS c(id, n)
WHERE d.id = ANY(@ids::bigint[]) AND d.id = c.id AND d.lease_token = @lease_token AND d.status = (@claimed_statuses::text[])[c.n]
RETURNING d.id;

-- name: DocumentRetryRefused :execrows
-- Makes a refused document due now with its refusal count reset (an
-- operator's retry of a document_refused case).
UPDATE invoicer.fiscal_documents
SET due_at = now(), refusals = 0, lease_token = NULL, lease_expires_at = NULL, updated_at = now()
WHERE id = @id AND status IN ('pending', 'unknown');

-- name: DocumentVoid :execrows
-- Gives a document not yet held by the provider up (an operator's void of
-- a refused document): it is never sent again.
UPDATE invoicer.fiscal_documents
SET status = 'voided', lease_token = NULL, lease_expires_at = NULL, updated_at = now(), audit_changed_at = now()
WHERE id = @id AND status = @from_status AND status IN ('pending', 'unknown');

-- name: DocumentReissue :one
-- Records the corrected copy of document @replaces_id under the next
-- revision and the first of @candidates no document holds; the replaced
-- row is kept as it is.
INSERT INTO invoicer.fiscal_documents
    (source_kind, source_ref, kind, event_key, reference, cfe_type, amount_minor, currency,
     buyer, lines, original_source_ref, traceparent, revision, replaces_id, accepted_at)
SELECT o.source_kind, o.source_ref, o.kind, o.event_key,
       (SELECT c.ref FROM unnest(@candidates::text[]) WITH ORDINALITY AS c(ref, n)
        WHERE NOT EXISTS (SELECT 1 FROM invoicer.fiscal_documents h WHERE h.reference = c.ref)
        ORDER BY c.n LIMIT 1),
       o.cfe_type, o.amount_minor, o.currency,
       o.buyer, o.lines, o.original_source_ref, o.traceparent, o.revision + 1, o.id, o.accepted_at
FROM invoicer.fiscal_documents o WHERE o.id = @replaces_id
RETURNING *;

-- name: DocumentMakeCreditNotesDue :execrows
-- Makes the credit notes waiting for payment @payment_ref's invoice due now.
UPDATE invoicer.fiscal_documents SET due_at = now(), updated_at = now()
WHERE kind = 'credit_note' AND original_source_ref = @payment_ref AND status = 'pending';

-- name: DocumentReleaseHandoff :execrows
-- Ends the claims of the documents recorded claimed under a handoff's
-- token that its process stops without working (store.Handoff), so the
-- next claim takes them at once rather than when their lease ends.
UPDATE invoicer.fiscal_documents
SET lease_token = NULL, lease_expires_at = NULL
WHERE lease_token = @lease_token AND status = 'pending';
