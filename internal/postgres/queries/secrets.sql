-- SecretPut stores a secret's sealed value, new or in place of the one of its name, with who set
-- it (the value is sealed bound to them): inserted says which.
-- name: SecretPut :one
INSERT INTO secrets (owner_id, project_id, name, sealed) VALUES (@owner_id, @project_id, @name, @sealed)
ON CONFLICT (project_id, name) DO UPDATE SET sealed = excluded.sealed, owner_id = excluded.owner_id, updated_at = now()
RETURNING name, created_at, updated_at, (xmax = 0) AS inserted;

-- name: SecretList :many
SELECT name, created_at, updated_at FROM secrets WHERE project_id = @project_id ORDER BY name;

-- name: SecretCount :one
SELECT count(*) FROM secrets WHERE project_id = @project_id;

-- name: SecretDelete :execrows
DELETE FROM secrets WHERE project_id = @project_id AND name = @name;

-- SecretGetMany reads the sealed values of the project's secrets of the names given.
-- name: SecretGetMany :many
SELECT name, sealed, owner_id FROM secrets WHERE project_id = @project_id AND name = ANY(@names::text[]);
