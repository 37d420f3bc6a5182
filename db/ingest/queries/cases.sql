-- name: CaseOpen :one
-- Opens a case, or touches the open one of the same kind and subject: the
-- same situation seen again moves updated_at and refreshes the evidence.
INSERT INTO ingest.cases (kind, subject, psp, psp_payment_id, psp_refund_id, order_id,
                          amount_minor, currency, receipt_id, evidence)
VALUES (@kind, @subject, @psp, @psp_payment_id, @psp_refund_id, @order_id,
        @amount_minor, @currency, @receipt_id, @evidence)
ON CONFLICT (kind, subject) WHERE closed_at IS NULL
DO UPDATE SET updated_at = now(), evidence = excluded.evidence,
    receipt_id = coalesce(excluded.receipt_id, ingest.cases.receipt_id)
RETURNING id;

-- name: CaseGet :one
SELECT * FROM ingest.cases WHERE id = @id;

-- name: CaseLock :one
SELECT * FROM ingest.cases WHERE id = @id FOR UPDATE;

-- name: CaseList :many
-- Cases by status (open, closed, all) and optionally kind, newest first.
SELECT * FROM ingest.cases
WHERE (@status::text = 'all' OR (@status::text = 'open') = (closed_at IS NULL))
  AND (@kind::text = '' OR kind = @kind::text)
ORDER BY id DESC
LIMIT @max_rows;

-- name: CaseClose :one
-- Closes an open case with who closed it, how and why; no row when it is
-- closed already.
UPDATE ingest.cases
SET closed_at = now(), updated_at = now(), closed_by = @closed_by, action = @action, reason = @reason,
    psp_refund_id = CASE WHEN @psp_refund_id::text = '' THEN psp_refund_id ELSE @psp_refund_id::text END
WHERE id = @id AND closed_at IS NULL
RETURNING *;

-- name: CaseOpenStats :many
-- Open cases per kind and the age of the oldest, by the database's clock.
SELECT kind, count(*) AS open,
       extract(epoch FROM now() - min(opened_at))::float8 AS oldest_age_seconds
FROM ingest.cases
WHERE closed_at IS NULL
GROUP BY kind
ORDER BY kind;

-- name: CaseOpenOfReceipt :many
-- The open cases that name receipt id (at most one in practice).
SELECT * FROM ingest.cases
WHERE receipt_id = @receipt_id AND closed_at IS NULL
ORDER BY id;
