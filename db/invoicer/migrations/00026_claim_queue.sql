-- +goose NO TRANSACTION
-- +goose Up
-- The emitters claim the oldest due documents, by (due_at, id), a batch at a
-- time. Indexed by due_at alone, the order had to be finished by a sort, and
-- the plan a prepared claim keeps when the table was analyzed with nothing
-- due sorted every due document to take a batch: after a provider outage,
-- each claim would have read the whole backlog. Indexed in the claim's own
-- order, a claim reads its batch and stops. Built without blocking the
-- writers; a build that failed half way is dropped first.
DROP INDEX CONCURRENTLY IF EXISTS invoicer.fiscal_documents_queue;
CREATE INDEX CONCURRENTLY fiscal_documents_queue ON invoicer.fiscal_documents (due_at, id)
    WHERE status IN ('pending', 'unknown', 'pending_dgi');
DROP INDEX CONCURRENTLY IF EXISTS invoicer.fiscal_documents_due;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS fiscal_documents_due ON invoicer.fiscal_documents (due_at)
    WHERE status IN ('pending', 'unknown', 'pending_dgi');
DROP INDEX CONCURRENTLY IF EXISTS invoicer.fiscal_documents_queue;
