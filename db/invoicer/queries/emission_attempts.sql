-- name: AttemptInsert :copyfrom
-- Records provider calls made for documents, with COPY.
INSERT INTO invoicer.emission_attempts (document_id, operation, outcome, error, latency_ms)
VALUES (@document_id, @operation, @outcome, @error, @latency_ms);

-- name: AttemptListByDocument :many
SELECT * FROM invoicer.emission_attempts WHERE document_id = @document_id ORDER BY id;

-- name: AttemptPageByDocument :many
-- AttemptPageByDocument returns up to @max_rows attempts of @document_id,
-- newest first, with an id below @before_id (0: from the newest), served by
-- the (document_id, id) index.
SELECT * FROM invoicer.emission_attempts
WHERE document_id = @document_id AND (@before_id::bigint = 0 OR id < @before_id::bigint)
ORDER BY id DESC
LIMIT @max_rows;

-- name: AttemptsPruneBound :one
-- AttemptsPruneBound returns the id of the first attempt with an id above
-- @after_id made at or after @older_than (the largest bigint when none): a
-- pass of AttemptsPrune looks only below it, so it never reads the attempts
-- still retained. It walks the primary key from @after_id, reading the
-- expired attempts once a pass. Run it under pg.WalkKeys.
SELECT coalesce((SELECT n.id FROM invoicer.emission_attempts n
                 WHERE n.id > @after_id AND n.created_at >= @older_than
                 ORDER BY n.id LIMIT 1), 9223372036854775807)::bigint AS bound;

-- name: AttemptsPrune :one
-- AttemptsPrune looks at up to @batch_size attempts made before
-- @older_than with an id between @after_id and @below_id, in id order, and
-- deletes those of documents in a final status (authorized, issued,
-- rejected, voided) but each document's last attempt. It returns the
-- highest id it looked at (0: none) and how many it deleted: the next batch
-- starts above that id, so a pass reads each attempt once, however many are
-- kept. Run it under pg.WalkKeys (store.PruneAttempts).
WITH looked AS (
    SELECT a.id, a.document_id
    FROM invoicer.emission_attempts a
    WHERE a.id > @after_id AND a.id < @below_id AND a.created_at < @older_than
    ORDER BY a.id
    LIMIT @batch_size
), deleted AS (
    DELETE FROM invoicer.emission_attempts x
    USING looked l, invoicer.fiscal_documents d
    WHERE x.id = l.id AND d.id = l.document_id
      AND d.status IN ('authorized', 'issued', 'rejected', 'voided')
      AND x.id < (SELECT max(m.id) FROM invoicer.emission_attempts m WHERE m.document_id = l.document_id)
    RETURNING x.id
)
SELECT coalesce((SELECT max(id) FROM looked), 0)::bigint AS last_id, (SELECT count(*) FROM deleted) AS deleted;
