-- name: IngestCasesList :many
-- IngestCasesList lists ingest's cases in @status (open, closed, all),
-- optionally of one @kind, oldest first. Read through the read-only ingest
-- connection.
SELECT id, kind, subject, psp, psp_payment_id, psp_refund_id, order_id, amount_minor, currency,
       evidence, opened_at, updated_at, closed_at, closed_by, action, reason
FROM ingest.cases
WHERE (@status::text = 'all' OR (@status::text = 'open') = (closed_at IS NULL))
  AND (@kind::text = '' OR kind = @kind::text)
ORDER BY opened_at, id
LIMIT @max_rows;

-- name: IngestCaseGet :one
-- IngestCaseGet returns ingest's case @id.
SELECT id, kind, subject, psp, psp_payment_id, psp_refund_id, order_id, amount_minor, currency,
       evidence, opened_at, updated_at, closed_at, closed_by, action, reason
FROM ingest.cases WHERE id = @id;

-- name: IngestCasesOpenAbout :many
-- IngestCasesOpenAbout returns the subjects among @subjects that have an
-- open ingest case.
SELECT DISTINCT subject FROM ingest.cases
WHERE closed_at IS NULL AND subject = ANY(@subjects::text[]);

-- name: IngestCasesOpenStats :many
-- IngestCasesOpenStats counts ingest's open cases of @kind with the oldest
-- one's opening time.
SELECT kind, count(*) AS open, min(opened_at)::timestamptz AS oldest
FROM ingest.cases
WHERE closed_at IS NULL AND kind = @kind
GROUP BY kind;

-- name: InvoicerCasesList :many
-- InvoicerCasesList lists the invoicer's cases like IngestCasesList. Read
-- through the read-only invoicer connection.
SELECT id, kind, subject, psp, psp_payment_id, psp_refund_id, order_id, amount_minor, currency,
       evidence, opened_at, updated_at, closed_at, closed_by, action, reason
FROM invoicer.cases
WHERE (@status::text = 'all' OR (@status::text = 'open') = (closed_at IS NULL))
  AND (@kind::text = '' OR kind = @kind::text)
ORDER BY opened_at, id
LIMIT @max_rows;

-- name: InvoicerCaseGet :one
-- InvoicerCaseGet returns the invoicer's case @id.
SELECT id, kind, subject, psp, psp_payment_id, psp_refund_id, order_id, amount_minor, currency,
       evidence, opened_at, updated_at, closed_at, closed_by, action, reason
FROM invoicer.cases WHERE id = @id;

-- name: InvoicerCasesOpenAboutPayments :many
-- InvoicerCasesOpenAboutPayments returns the payment ids among @ids whose
-- invoice has an open invoicer case (one without a refund id).
SELECT DISTINCT psp_payment_id::text AS id FROM invoicer.cases
WHERE closed_at IS NULL AND psp_refund_id = '' AND psp_payment_id = ANY(@ids::text[]);

-- name: InvoicerCasesOpenAboutRefunds :many
-- InvoicerCasesOpenAboutRefunds returns the refund ids among @ids whose
-- credit note has an open invoicer case.
SELECT DISTINCT psp_refund_id::text AS id FROM invoicer.cases
WHERE closed_at IS NULL AND psp_refund_id = ANY(@ids::text[]);

-- name: InvoicerCasesOpenStats :many
-- InvoicerCasesOpenStats counts the invoicer's open cases of @kind with the
-- oldest one's opening time.
SELECT kind, count(*) AS open, min(opened_at)::timestamptz AS oldest
FROM invoicer.cases
WHERE closed_at IS NULL AND kind = @kind
GROUP BY kind;
