-- name: DocumentRecord :execrows
-- Records the document a billing event asks for; a redelivered event
-- inserts nothing and returns 0.
INSERT INTO invoicer.fiscal_documents
    (source_kind, source_ref, kind, event_key, reference, cfe_type, amount_minor, currency,
     buyer, lines, original_source_ref)
VALUES (@source_kind, @source_ref, @kind, @event_key, @reference, @cfe_type, @amount_minor, @currency,
        @buyer, @lines, @original_source_ref)
ON CONFLICT (source_kind, source_ref, kind) DO NOTHING;

-- name: DocumentClaimDue :many
-- Claims due documents not leased by a live worker; every later write must
-- present the returned lease token.
UPDATE invoicer.fiscal_documents d
SET lease_token = @lease_token, lease_expires_at = now() + make_interval(secs => @lease_seconds::float8),
    attempts = d.attempts + 1, updated_at = now()
WHERE d.id IN (
    SELECT id FROM invoicer.fiscal_documents
    WHERE status IN ('pending', 'unknown', 'pending_dgi') AND due_at <= now()
      AND (lease_expires_at IS NULL OR lease_expires_at < now())
    ORDER BY due_at, id
    LIMIT @max_rows
    FOR UPDATE SKIP LOCKED)
RETURNING d.*;

-- name: DocumentGetInvoiceOf :one
-- The invoice recorded for a payment, which a credit note must reference.
SELECT * FROM invoicer.fiscal_documents
WHERE source_kind = 'payment' AND source_ref = @payment_ref AND kind = 'invoice';

-- name: DocumentSaveResult :execrows
-- Saves an attempt's result, only while the caller's lease is still held.
UPDATE invoicer.fiscal_documents
SET status = @status, provider_series = @provider_series, provider_number = @provider_number,
    provider_status = @provider_status, provider_cae = @provider_cae,
    provider_security_code = @provider_security_code, provider_url = @provider_url,
    issue_date = @issue_date, unknown_since = @unknown_since, due_at = @due_at,
    dgi_polls = @dgi_polls, last_error = @last_error, attention_reason = @attention_reason,
    lease_token = NULL, lease_expires_at = NULL, updated_at = now()
WHERE id = @id AND lease_token = @lease_token;

-- name: DocumentCountByStatus :many
SELECT status, count(*)::bigint AS documents FROM invoicer.fiscal_documents GROUP BY status ORDER BY status;
