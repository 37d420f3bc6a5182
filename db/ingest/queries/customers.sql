-- name: CustomerInsert :one
INSERT INTO ingest.customers (doc_type, doc_country, doc_number, legal_name, address, city, department, country, email)
VALUES (@doc_type, @doc_country, @doc_number, @legal_name, @address, @city, @department, @country, @email)
RETURNING *;

-- name: CustomerGet :one
SELECT * FROM ingest.customers WHERE id = @id;
