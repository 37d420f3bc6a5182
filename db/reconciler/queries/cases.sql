-- name: CaseOpenOrTouch :one
-- CaseOpenOrTouch opens a case of @kind about @subject, or refreshes the
-- open one (its evidence and updated_at): one open case per (kind, subject).
INSERT INTO reconciler.cases AS c (kind, subject, psp, psp_payment_id, psp_refund_id, order_id,
                                   amount_minor, currency, evidence)
VALUES (@kind, @subject, @psp, @psp_payment_id, @psp_refund_id, @order_id,
        sqlc.narg(amount_minor), @currency, @evidence)
ON CONFLICT (kind, subject) WHERE closed_at IS NULL
DO UPDATE SET updated_at = now(), evidence = excluded.evidence
RETURNING *;

-- name: CasesList :many
-- CasesList lists the reconciler's cases in @status (open, closed, all),
-- optionally of one @kind, oldest first.
SELECT * FROM reconciler.cases
WHERE (@status::text = 'all' OR (@status::text = 'open') = (closed_at IS NULL))
  AND (@kind::text = '' OR kind = @kind::text)
ORDER BY opened_at, id
LIMIT @max_rows;

-- name: CaseGet :one
-- CaseGet returns the reconciler's case @id.
SELECT * FROM reconciler.cases WHERE id = @id;

-- name: CaseClose :one
-- CaseClose closes the open case @id with the closing record; no rows when
-- it does not exist or is closed already.
UPDATE reconciler.cases
SET closed_at = now(), updated_at = now(), closed_by = @closed_by, action = @action, reason = @reason
WHERE id = @id AND closed_at IS NULL
RETURNING *;

-- name: CasesOpenOfKind :many
-- CasesOpenOfKind lists at most @max_rows open cases of @kind, oldest
-- first (the sweep checks its missing_document cases each run).
SELECT * FROM reconciler.cases
WHERE closed_at IS NULL AND kind = @kind
ORDER BY opened_at, id
LIMIT @max_rows;

-- name: CasesOpenStats :many
-- CasesOpenStats counts the reconciler's open cases per kind with the oldest
-- one's opening time, for the metrics.
SELECT kind, count(*) AS open, min(opened_at)::timestamptz AS oldest
FROM reconciler.cases
WHERE closed_at IS NULL
GROUP BY kind;

-- name: CaseOpenUnlessClosed :exec
-- CaseOpenUnlessClosed opens a case like CaseOpenOrTouch unless a case of
-- @kind about @subject was closed already: an audit disagreement an
-- operator acknowledged is not opened again by the next audit seeing it.
INSERT INTO reconciler.cases AS c (kind, subject, psp, psp_payment_id, psp_refund_id, order_id,
                                   amount_minor, currency, evidence)
SELECT @kind, @subject, @psp, @psp_payment_id, @psp_refund_id, @order_id,
       sqlc.narg(amount_minor), @currency, @evidence
WHERE NOT EXISTS (SELECT 1 FROM reconciler.cases d
                  WHERE d.kind = @kind AND d.subject = @subject AND d.closed_at IS NOT NULL)
ON CONFLICT (kind, subject) WHERE closed_at IS NULL
DO UPDATE SET updated_at = now(), evidence = excluded.evidence;
