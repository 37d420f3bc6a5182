-- name: AttemptInsert :copyfrom
-- Records provider calls made for documents, with COPY.
INSERT INTO invoicer.emission_attempts (document_id, operation, outcome, error, latency_ms)
VALUES (@document_id, @operation, @outcome, @error, @latency_ms);

-- name: AttemptListByDocument :many
SELECT * FROM invoicer.emission_attempts WHERE document_id = @document_id ORDER BY id;
