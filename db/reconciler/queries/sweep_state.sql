-- name: SweepStateGet :one
-- SweepStateGet returns where the sweep of @source_kind stands.
SELECT * FROM reconciler.sweep_state WHERE source_kind = @source_kind;

-- name: SweepStateAdvanceRecent :exec
-- SweepStateAdvanceRecent moves the recent pass's watermark of
-- @source_kind to (@recent_at, @recent_id), never back: two sweeps at once
-- leave the furthest.
INSERT INTO reconciler.sweep_state AS s (source_kind, recent_at, recent_id)
VALUES (@source_kind, @recent_at::timestamptz, @recent_id::text)
ON CONFLICT (source_kind) DO UPDATE
SET recent_at = excluded.recent_at, recent_id = excluded.recent_id, updated_at = now()
WHERE s.recent_at IS NULL OR (excluded.recent_at, excluded.recent_id) > (s.recent_at, s.recent_id);

-- name: SweepStateAdvanceFull :exec
-- SweepStateAdvanceFull moves the full pass's cursor of @source_kind to
-- (@full_at, @full_id).
INSERT INTO reconciler.sweep_state AS s (source_kind, full_at, full_id)
VALUES (@source_kind, @full_at::timestamptz, @full_id::text)
ON CONFLICT (source_kind) DO UPDATE
SET full_at = excluded.full_at, full_id = excluded.full_id, updated_at = now();

-- name: SweepStateFinishFull :exec
-- SweepStateFinishFull records a finished full pass of @source_kind and
-- starts the next one from the oldest.
INSERT INTO reconciler.sweep_state AS s (source_kind, full_passes, full_finished_at)
VALUES (@source_kind, 1, now())
ON CONFLICT (source_kind) DO UPDATE
SET full_at = NULL, full_id = '', full_passes = s.full_passes + 1, full_finished_at = now(), updated_at = now();
