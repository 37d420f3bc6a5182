-- name: RateOn :one
-- The value of code on day: that day's, or the latest of the seven before
-- (weekends and holidays have none of their own).
SELECT value::text AS value FROM invoicer.rates
WHERE code = sqlc.arg(code) AND day BETWEEN sqlc.arg(day)::date - 6 AND sqlc.arg(day)::date
ORDER BY day DESC LIMIT 1;

-- name: RateSave :exec
-- Records code's value on day; an existing value is replaced only when
-- replace is set (a file loaded by an operator), never by a source's later
-- answer.
INSERT INTO invoicer.rates (code, day, value, source)
VALUES (sqlc.arg(code), sqlc.arg(day), sqlc.arg(value)::text::numeric, sqlc.arg(source))
ON CONFLICT (code, day) DO UPDATE SET value = EXCLUDED.value, source = EXCLUDED.source, created_at = now()
WHERE sqlc.arg(replace)::boolean;

-- name: DocumentFixExchangeRate :one
-- Fixes a document's exchange rate the first time it is built and returns
-- the one it keeps: a rate fixed earlier wins, so every send carries it.
UPDATE invoicer.fiscal_documents
SET exchange_rate_milli = COALESCE(exchange_rate_milli, @rate::bigint), updated_at = now()
WHERE id = @id
RETURNING exchange_rate_milli;
