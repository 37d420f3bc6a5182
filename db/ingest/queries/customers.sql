-- name: CustomerInsert :one
-- The id is a UUIDv7 minted by the store (newID).
INSERT INTO ingest.customers (id, doc_type, doc_country, doc_number, legal_name, address, city, department, country, email)
VALUES (@id, @doc_type, @doc_country, @doc_number, @legal_name, @address, @city, @department, @country, @email)
RETURNING *;

-- name: CustomerGet :one
SELECT * FROM ingest.customers WHERE id = @id;

-- name: CustomerList :many
-- Customers keyset-paged by creation, newest last.
SELECT * FROM ingest.customers
WHERE (created_at, id) > (@after_created, @after_id::uuid)
ORDER BY created_at, id
LIMIT @max_rows;
