-- name: ResolutionInsert :exec
-- Records an operator's decision on a document.
INSERT INTO invoicer.document_resolutions (document_id, action, actor, reason, from_status, to_status)
VALUES (@document_id, @action, @actor, @reason, @from_status, @to_status);

-- name: ResolutionListByDocument :many
SELECT * FROM invoicer.document_resolutions WHERE document_id = @document_id ORDER BY id;
