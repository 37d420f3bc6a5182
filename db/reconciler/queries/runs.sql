-- name: RunStart :one
-- RunStart opens a reconciliation run of part @part; its finished_at stays
-- NULL until RunFinish, or forever when the process died mid-run.
INSERT INTO reconciler.runs (part) VALUES (@part)
RETURNING id, started_at;

-- name: RunFinish :exec
-- RunFinish closes run @id with its counts and, when it failed, the error text.
UPDATE reconciler.runs
SET finished_at = now(),
    checked = @checked,
    missing = @missing,
    missing_events = @missing_events,
    republished = @republished,
    findings_seen = @findings_seen,
    findings_closed = @findings_closed,
    error = sqlc.narg(error)
WHERE id = @id;

-- name: RunLast :one
-- The latest run that swept, finished or not (the primary key's last
-- entries: the audit's runs, one an interval at most, are passed over).
SELECT id, started_at, finished_at, checked, missing, missing_events, republished, findings_seen, findings_closed, error
FROM reconciler.runs WHERE part <> 'audit' ORDER BY id DESC LIMIT 1;

-- name: RunsPrune :execrows
-- RunsPrune deletes, of the @batch oldest runs, those started before
-- @before. It walks the primary key from the oldest row, so it reads only
-- the rows it may delete and needs no index on started_at.
DELETE FROM reconciler.runs
WHERE id = ANY(ARRAY(SELECT r.id FROM reconciler.runs r ORDER BY r.id LIMIT @batch::int))
  AND started_at < @before::timestamptz;
