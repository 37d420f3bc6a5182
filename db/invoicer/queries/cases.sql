-- name: CaseOpen :one
-- Opens the case of (kind, subject) or, when one is open already, notes that
-- the situation was seen again (updated_at, the latest evidence).
INSERT INTO invoicer.cases (kind, subject, psp, psp_payment_id, psp_refund_id, order_id,
                            amount_minor, currency, document_id, evidence)
VALUES (@kind, @subject, @psp, @psp_payment_id, @psp_refund_id, @order_id,
        @amount_minor, @currency, @document_id, @evidence)
ON CONFLICT (kind, subject) WHERE closed_at IS NULL
DO UPDATE SET updated_at = now(), evidence = EXCLUDED.evidence
RETURNING *;

-- name: CaseGet :one
SELECT * FROM invoicer.cases WHERE id = @id;

-- name: CaseGetOpen :one
-- The open case of (kind, subject), if any.
SELECT * FROM invoicer.cases WHERE kind = @kind AND subject = @subject AND closed_at IS NULL;

-- name: CaseList :many
-- Cases newest first, open, closed or all (@status), optionally of one kind.
SELECT * FROM invoicer.cases
WHERE (@status::text = 'all' OR (@status = 'open') = (closed_at IS NULL))
  AND (sqlc.narg(kind)::text IS NULL OR kind = sqlc.narg(kind))
ORDER BY id DESC
LIMIT @max_rows;

-- name: CaseClose :one
-- Closes an open case with who closed it, how and why; no row when it is
-- closed already.
UPDATE invoicer.cases
SET closed_at = now(), updated_at = now(), closed_by = @closed_by, action = @action, reason = @reason
WHERE id = @id AND closed_at IS NULL
RETURNING *;

-- name: CaseOpenStats :many
-- Open cases per kind and the oldest one's age, by the database's clock.
SELECT kind, count(*)::bigint AS open,
       extract(epoch FROM now() - min(opened_at))::float8 AS oldest_age_seconds
FROM invoicer.cases WHERE closed_at IS NULL
GROUP BY kind ORDER BY kind;
