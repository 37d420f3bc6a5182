-- +goose Up
-- A webhook's body is most of its receipt's row, and PostgreSQL compresses
-- a value only in a row over about 2 KB: a dLocal notification (about 550
-- bytes of JSON) was written, and logged, whole. Ingest now stores a body
-- deflated when that is smaller (about 340 bytes for that one), and says so
-- here; a body stored before this column, or one deflate does not shrink,
-- is stored as received.
ALTER TABLE ingest.webhook_receipts ADD COLUMN body_deflated boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE ingest.webhook_receipts DROP COLUMN body_deflated;
