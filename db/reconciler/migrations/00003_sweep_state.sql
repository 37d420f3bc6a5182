-- +goose Up
-- Where the missing-document sweep stands, per source kind (payment,
-- refund), so a run's cost does not grow with history: the recent pass
-- starts at the watermark (recent_at, recent_id) minus an overlap, and the
-- full pass re-checks older history a bounded slice per run from its
-- cursor (full_at, full_id), starting over when it reaches the recent
-- pass's start.
CREATE TABLE reconciler.sweep_state (
    source_kind      text PRIMARY KEY,
    recent_at        timestamptz,
    recent_id        text NOT NULL DEFAULT '',
    full_at          timestamptz,
    full_id          text NOT NULL DEFAULT '',
    full_passes      bigint NOT NULL DEFAULT 0,
    full_finished_at timestamptz,
    updated_at       timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE reconciler.sweep_state;
