-- name: DocumentsValidForSources :many
-- DocumentsValidForSources returns the subset of @source_refs that have a
-- valid document of @kind for @source_kind: one DGI authorized or the
-- provider issued. A rejected, voided or unfinished document does not
-- count (docs/cases.md). Served by the (source_kind, source_ref, kind)
-- unique index. Read through the read-only invoicer connection: ingest and
-- invoicer may be different databases, so the sweep never joins them and
-- asks each in turn.
SELECT source_ref
FROM invoicer.fiscal_documents
WHERE source_kind = @source_kind
  AND kind = @kind
  AND source_ref = ANY(@source_refs::text[])
  AND status IN ('authorized', 'observed', 'issued');

-- name: DocumentsStatusForSources :many
-- DocumentsStatusForSources returns the status of every document of @kind
-- for @source_kind among @source_refs, for a missing_document case's evidence.
SELECT source_ref, status
FROM invoicer.fiscal_documents
WHERE source_kind = @source_kind
  AND kind = @kind
  AND source_ref = ANY(@source_refs::text[]);

-- name: DocumentsAuditIssuedOn :many
-- DocumentsAuditIssuedOn pages (by id, after @after_id) through the
-- documents the provider acknowledged (pending_dgi, authorized, observed,
-- issued, rejected) with the issue date @day. The equality on issue_date
-- lets fiscal_documents_issue_date_id hand the rows over in id order, so a
-- page reads about its own rows however much history lies before the day.
-- Read through the read-only invoicer connection.
SELECT id, reference, source_kind, source_ref, kind, status, amount_minor, currency
FROM invoicer.fiscal_documents
WHERE issue_date = @day::date AND id > @after_id
  AND status IN ('pending_dgi', 'authorized', 'observed', 'issued', 'rejected')
ORDER BY id
LIMIT @page_size;

-- name: DocumentsAuditNumberBands :many
-- DocumentsAuditNumberBands returns, for each CFE type among the documents
-- issued on @day that the provider numbered, the lowest and highest
-- number: where the audit lists a day too large for one answer, type by
-- type in number ranges. Reads the day's rows through
-- fiscal_documents_issue_date_id, as DocumentsAuditIssuedOn does.
SELECT cfe_type, min(provider_number)::bigint AS lowest, max(provider_number)::bigint AS highest
FROM invoicer.fiscal_documents
WHERE issue_date = @day::date AND provider_number IS NOT NULL
GROUP BY cfe_type
ORDER BY cfe_type;

-- name: DocumentsAuditUnissued :many
-- DocumentsAuditUnissued pages (by id, after @after_id) through the
-- acknowledged documents with no issue date yet, created from
-- @created_from until before @created_to: a few, found through the partial
-- fiscal_documents_created_at index.
SELECT id, reference, source_kind, source_ref, kind, status, amount_minor, currency
FROM invoicer.fiscal_documents
WHERE issue_date IS NULL AND created_at >= @created_from AND created_at < @created_to AND id > @after_id
  AND status IN ('pending_dgi', 'authorized', 'observed', 'issued', 'rejected')
ORDER BY id
LIMIT @page_size;

-- name: DocumentsAuditByReferences :many
-- DocumentsAuditByReferences returns the documents, in any status, under
-- the given provider references (served by the unique index on reference).
SELECT id, reference, source_kind, source_ref, kind, status, amount_minor, currency
FROM invoicer.fiscal_documents
WHERE reference = ANY(@refs::text[]);

-- name: DocumentsAuditChanged :many
-- DocumentsAuditChanged pages, in (audit_changed_at, id) order after the
-- cursor (@after_changed_at, @after_id), through the documents the provider
-- must hold for the days @from_date to @to_date (those DocumentsAuditIssuedOn
-- and DocumentsAuditUnissued list) whose audited fields changed at or after
-- @after_changed_at and before @before: what changed since the audit's
-- previous mark, up to its new one. The plain audit_changed_at bounds let the
-- fiscal_documents_audit_changed index narrow the scan to those rows.
SELECT id, reference, source_kind, source_ref, kind, status, amount_minor, currency,
       issue_date, created_at, audit_changed_at
FROM invoicer.fiscal_documents
WHERE audit_changed_at >= @after_changed_at::timestamptz
  AND audit_changed_at < @before::timestamptz
  AND (audit_changed_at, id) > (@after_changed_at::timestamptz, @after_id::bigint)
  AND status IN ('pending_dgi', 'authorized', 'observed', 'issued', 'rejected')
  AND (issue_date BETWEEN @from_date::date AND @to_date::date
       OR (issue_date IS NULL AND created_at >= @created_from AND created_at < @created_to))
ORDER BY audit_changed_at, id
LIMIT @page_size;

-- name: DocumentIDBounds :one
-- DocumentIDBounds returns the lowest and highest document id (0 and 0
-- when there is none): the ends of the sweep's search by creation time.
SELECT coalesce(min(id), 0)::bigint AS lowest, coalesce(max(id), 0)::bigint AS highest
FROM invoicer.fiscal_documents;

-- name: DocumentFromID :one
-- DocumentFromID returns the id and creation time of the first document
-- whose id is @id or above: one step of the sweep's search by creation time.
SELECT id, created_at
FROM invoicer.fiscal_documents
WHERE id >= @id
ORDER BY id
LIMIT 1;

-- name: DocumentsValidAfterID :one
-- DocumentsValidAfterID reads the next @scan documents after @after_id in
-- id order, through the primary key, and returns the last id read, the
-- latest creation time among them, how many it read, and the source refs of
-- those that are valid documents of @kind for @source_kind (as in
-- DocumentsValidForSources). Ids follow the order documents were created
-- in, so the sweep reads those of a span of time as one range of the
-- primary key's right-hand pages, where a probe per source ref lands on
-- a random page of the source ref index (PSP ids are random).
WITH d AS (
    SELECT id, created_at, source_kind, source_ref, kind, status
    FROM invoicer.fiscal_documents
    WHERE id > @after_id
    ORDER BY id
    LIMIT @scan
)
SELECT coalesce(max(id), 0)::bigint AS last_id,
       coalesce(max(created_at), 'epoch')::timestamptz AS reached, -- 'epoch' when none
       count(*)::int AS scanned,
       coalesce(array_agg(source_ref) FILTER (
           WHERE source_kind = @source_kind AND kind = @kind AND status IN ('authorized', 'observed', 'issued')
       ), '{}')::text[] AS valid_refs
FROM d;
