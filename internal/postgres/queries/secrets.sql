-- SecretPut stores a secret's sealed value, new or in place of the one of its name: inserted
-- says which.
-- name: SecretPut :one
INSERT INTO secrets (owner_id, name, sealed) VALUES (@owner_id, @name, @sealed)
ON CONFLICT (owner_id, name) DO UPDATE SET sealed = excluded.sealed, updated_at = now()
RETURNING name, created_at, updated_at, (xmax = 0) AS inserted;

-- name: SecretList :many
SELECT name, created_at, updated_at FROM secrets WHERE owner_id = @owner_id ORDER BY name;

-- name: SecretCount :one
SELECT count(*) FROM secrets WHERE owner_id = @owner_id;

-- name: SecretDelete :execrows
DELETE FROM secrets WHERE owner_id = @owner_id AND name = @name;

-- SecretGetMany reads the sealed values of the owner's secrets of the names given.
-- name: SecretGetMany :many
SELECT name, sealed FROM secrets WHERE owner_id = @owner_id AND name = ANY(@names::text[]);
