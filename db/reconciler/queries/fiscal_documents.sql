-- name: DocumentsExistingForSources :many
-- DocumentsExistingForSources returns the subset of @source_refs that already
-- have a document of @kind for @source_kind (served by the (source_kind,
-- source_ref, kind) unique index). Read through the read-only invoicer
-- connection: ingest and invoicer may be different databases, so the sweep
-- never joins them and asks each in turn.
SELECT source_ref
FROM invoicer.fiscal_documents
WHERE source_kind = @source_kind
  AND kind = @kind
  AND source_ref = ANY(@source_refs::text[]);
