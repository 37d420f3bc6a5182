-- +goose Up
-- A recurring order may name the PSP plan its buyer subscribes to, so the
-- status poller can find the order's subscriptions among the plan's by the
-- order's reference before any execution of them is recorded (a first
-- execution whose every notification was lost).
ALTER TABLE ingest.orders ADD COLUMN psp_plan_id text;

-- +goose Down
ALTER TABLE ingest.orders DROP COLUMN psp_plan_id;
