-- name: FindingSeen :exec
-- FindingSeen opens a finding, or refreshes the open one of the same kind
-- and reference: one open finding per (kind, reference), however many runs
-- see it.
INSERT INTO reconciler.findings AS f (kind, reference, detail)
VALUES (@kind, @reference, @detail)
ON CONFLICT (kind, reference) WHERE closed_at IS NULL
DO UPDATE SET last_seen_at = now(), detail = excluded.detail, seen_count = f.seen_count + 1;

-- name: FindingsCloseUnseen :execrows
-- FindingsCloseUnseen closes the open findings of @kinds that the run which
-- started at @run_started did not see again.
UPDATE reconciler.findings
SET closed_at = now()
WHERE closed_at IS NULL
  AND kind = ANY(@kinds::text[])
  AND last_seen_at < @run_started;

-- name: FindingsOpen :many
-- FindingsOpen lists open findings, oldest first, optionally of one kind.
SELECT id, kind, reference, detail, opened_at, last_seen_at, seen_count
FROM reconciler.findings
WHERE closed_at IS NULL
  AND (@kind::text = '' OR kind = @kind::text)
ORDER BY opened_at, id
LIMIT @max_rows;

-- name: FindingsOpenByKind :many
-- FindingsOpenByKind counts open findings per kind, for the metrics.
SELECT kind, count(*) AS open
FROM reconciler.findings
WHERE closed_at IS NULL
GROUP BY kind;

-- name: FindingClose :execrows
-- FindingClose closes the open finding of @kind and @reference, if any.
UPDATE reconciler.findings
SET closed_at = now()
WHERE closed_at IS NULL AND kind = @kind AND reference = @reference;
