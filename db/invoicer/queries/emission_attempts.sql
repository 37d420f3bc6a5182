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

-- name: AttemptsPrune :execrows
-- AttemptsPrune deletes up to @batch_size attempts made before @older_than
-- of documents in a final status (authorized, issued, rejected, voided),
-- keeping each document's last attempt. Oldest first, by id.
DELETE FROM invoicer.emission_attempts
WHERE id IN (
    SELECT a.id
    FROM invoicer.emission_attempts a
    JOIN invoicer.fiscal_documents d ON d.id = a.document_id
    WHERE a.created_at < @older_than
      AND d.status IN ('authorized', 'issued', 'rejected', 'voided')
      AND a.id < (SELECT max(l.id) FROM invoicer.emission_attempts l WHERE l.document_id = a.document_id)
    ORDER BY a.id
    LIMIT @batch_size
);
