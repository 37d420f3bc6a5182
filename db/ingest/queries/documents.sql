-- name: DocumentListByOrder :many
-- The documents of an order's payments and of their refunds, oldest first.
SELECT d.* FROM ingest.documents d
WHERE d.payment_ref IN (SELECT p.id FROM ingest.payments p WHERE p.order_id = @order_id)
ORDER BY d.kind DESC, d.occurred_at, d.reference;

-- name: OrderOfPayment :one
-- The order a payment belongs to, for a notification about its documents.
SELECT o.id, o.merchant_order_id FROM ingest.payments p JOIN ingest.orders o ON o.id = p.order_id
WHERE p.id = @payment_id;

-- name: DocumentUpsertMany :exec
-- Records what notifications say about documents of distinct references,
-- all in one statement: a document held is updated, a new one inserted. An
-- announcement older than the one held (occurred_at) changes nothing, so a
-- late redelivery never undoes news. @docs is a JSON array of objects keyed
-- by column name; a missing or null cae_expires or issue_date is NULL. It
-- looks held documents up rather than saying ON CONFLICT, which logs a
-- confirmation record after every row inserted: a document inserted by
-- another transaction meanwhile fails the statement with a unique
-- violation, and run again it is updated. @refs are the documents'
-- references again: the update finds its rows through the primary key with
-- them, and each insert looks its reference up on its own (a lateral
-- subquery with LIMIT is never made a join), where a join with the JSON,
-- which the planner expects to hold a hundred rows, read the whole table
-- while it held a few thousand documents.
WITH moved AS (
    UPDATE ingest.documents AS d
    SET status = u.status, series = u.series, number = u.number, cae_id = u.cae_id, cae_from = u.cae_from,
        cae_to = u.cae_to, cae_expires = u.cae_expires, security_code = u.security_code, verify_url = u.verify_url,
        issue_date = u.issue_date, reason = u.reason, event_key = u.event_key, occurred_at = u.occurred_at,
        updated_at = now()
    FROM jsonb_to_recordset(@docs::jsonb) AS u(reference text, occurred_at timestamptz, status text, series text,
        number bigint, cae_id text, cae_from bigint, cae_to bigint, cae_expires date, security_code text,
        verify_url text, issue_date date, reason text, event_key text)
    WHERE d.reference = ANY(@refs::text[]) AND d.reference = u.reference AND d.occurred_at <= u.occurred_at
)
INSERT INTO ingest.documents
    (reference, source_kind, source_ref, payment_ref, kind, revision, status, cfe_type, series, number,
     cae_id, cae_from, cae_to, cae_expires, security_code, verify_url, issue_date, amount_minor, currency,
     reason, event_key, occurred_at)
SELECT u.reference, u.source_kind, u.source_ref, u.payment_ref, u.kind, u.revision, u.status, u.cfe_type,
       u.series, u.number, u.cae_id, u.cae_from, u.cae_to, u.cae_expires, u.security_code, u.verify_url,
       u.issue_date, u.amount_minor, u.currency, u.reason, u.event_key, u.occurred_at
FROM jsonb_to_recordset(@docs::jsonb) AS u(reference text, source_kind text, source_ref text, payment_ref text,
    kind text, revision integer, status text, cfe_type integer, series text, number bigint, cae_id text,
    cae_from bigint, cae_to bigint, cae_expires date, security_code text, verify_url text, issue_date date,
    amount_minor bigint, currency text, reason text, event_key text, occurred_at timestamptz)
LEFT JOIN LATERAL (SELECT 1 AS held FROM ingest.documents d WHERE d.reference = u.reference LIMIT 1) AS held ON true
WHERE held.held IS NULL;
