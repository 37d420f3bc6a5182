-- name: DocumentUpsert :exec
-- Records what a notification says about a document; an announcement older
-- than the one held (occurred_at) changes nothing, so a late redelivery
-- never undoes news.
INSERT INTO ingest.documents
    (reference, source_kind, source_ref, payment_ref, kind, revision, status, cfe_type, series, number,
     cae_id, cae_from, cae_to, cae_expires, security_code, verify_url, issue_date, amount_minor, currency,
     reason, event_key, occurred_at)
VALUES (@reference, @source_kind, @source_ref, @payment_ref, @kind, @revision, @status, @cfe_type, @series, @number,
        @cae_id, @cae_from, @cae_to, sqlc.narg(cae_expires)::date, @security_code, @verify_url, sqlc.narg(issue_date)::date,
        @amount_minor, @currency, @reason, @event_key, @occurred_at)
ON CONFLICT (reference) DO UPDATE
SET status = excluded.status, series = excluded.series, number = excluded.number, cae_id = excluded.cae_id,
    cae_from = excluded.cae_from, cae_to = excluded.cae_to, cae_expires = excluded.cae_expires,
    security_code = excluded.security_code, verify_url = excluded.verify_url, issue_date = excluded.issue_date,
    reason = excluded.reason, event_key = excluded.event_key, occurred_at = excluded.occurred_at, updated_at = now()
WHERE ingest.documents.occurred_at <= excluded.occurred_at;

-- name: DocumentListByOrder :many
-- The documents of an order's payments and of their refunds, oldest first.
SELECT d.* FROM ingest.documents d
WHERE d.payment_ref IN (SELECT p.id FROM ingest.payments p WHERE p.order_id = @order_id)
ORDER BY d.kind DESC, d.occurred_at, d.reference;

-- name: OrderOfPayment :one
-- The order a payment belongs to, for a notification about its documents.
SELECT o.id, o.merchant_order_id FROM ingest.payments p JOIN ingest.orders o ON o.id = p.order_id
WHERE p.id = @payment_id;
