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

-- name: InvoicerCasesOpenAboutSources :many
-- InvoicerCasesOpenAboutSources returns the ids among @ids (payments or
-- refunds, by @source_kind) that an open invoicer case is about: through
-- the document it holds on to, or through its psp_payment_id (a payment's
-- case has no refund id) or psp_refund_id.
SELECT d.source_ref::text AS id
FROM invoicer.cases c JOIN invoicer.fiscal_documents d ON d.id = c.document_id
WHERE c.closed_at IS NULL AND d.source_kind = @source_kind::text AND d.source_ref = ANY(@ids::text[])
UNION
SELECT c.psp_payment_id FROM invoicer.cases c
WHERE c.closed_at IS NULL AND @source_kind::text = 'payment' AND c.psp_refund_id = ''
  AND c.psp_payment_id = ANY(@ids::text[])
UNION
SELECT c.psp_refund_id FROM invoicer.cases c
WHERE c.closed_at IS NULL AND @source_kind::text = 'refund' AND c.psp_refund_id = ANY(@ids::text[]);

-- name: InvoicerCasesOpenStats :many
-- InvoicerCasesOpenStats counts the invoicer's open cases of @kind with the
-- oldest one's opening time.
SELECT kind, count(*) AS open, min(opened_at)::timestamptz AS oldest
FROM invoicer.cases
WHERE closed_at IS NULL AND kind = @kind
GROUP BY kind;
