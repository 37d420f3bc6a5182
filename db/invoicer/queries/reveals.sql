-- name: RevealInsert :one
-- Records that actor was shown subject's personal data, and why.
INSERT INTO invoicer.reveals (subject, actor, reason) VALUES (@subject, @actor, @reason)
RETURNING *;

-- name: RevealList :many
-- Reveals newest first, below an id (0: from the newest).
SELECT * FROM invoicer.reveals
WHERE @before::bigint = 0 OR id < @before::bigint
ORDER BY id DESC LIMIT @max_rows;
