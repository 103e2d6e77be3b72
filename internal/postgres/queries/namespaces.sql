-- name: NamespaceInsert :one
INSERT INTO namespaces (name, reserved, claimed_by) VALUES ($1, $2, $3) RETURNING *;

-- name: NamespaceGet :one
SELECT * FROM namespaces WHERE name = $1;

-- name: NamespaceOwnerAdd :exec
INSERT INTO namespace_owners (namespace, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING;

-- NamespaceOwnerRemove removes an owner, unless it is the last.
-- name: NamespaceOwnerRemove :execrows
DELETE FROM namespace_owners o
WHERE o.namespace = @namespace AND o.user_id = @user_id
  AND (SELECT count(*) FROM namespace_owners c WHERE c.namespace = @namespace) > 1;

-- name: NamespaceOwnerIDs :many
SELECT user_id FROM namespace_owners WHERE namespace = $1 ORDER BY added_at, user_id;

-- name: NamespaceIsOwner :one
SELECT EXISTS (SELECT 1 FROM namespace_owners WHERE namespace = $1 AND user_id = $2)::boolean;

-- name: NamespacesOfUser :many
SELECT n.* FROM namespaces n JOIN namespace_owners o ON o.namespace = n.name
WHERE o.user_id = $1 ORDER BY n.name;

-- name: SigningKeyInsert :one
INSERT INTO signing_keys (namespace, id, public_key, added_by) VALUES ($1, $2, $3, $4) RETURNING *;

-- name: SigningKeys :many
SELECT * FROM signing_keys WHERE namespace = $1 ORDER BY created_at, id;

-- name: SigningKeyRetire :one
UPDATE signing_keys SET retired_at = coalesce(retired_at, now())
WHERE namespace = @namespace AND id = @id RETURNING *;

-- NamespaceTakeBack reserves a namespace a user claimed, for an admin, saying why.
-- name: NamespaceTakeBack :exec
UPDATE namespaces SET reserved = true, reserved_reason = @reason, claimed_by = NULL WHERE name = @name;

-- NamespaceOwnersClear removes every owner of a namespace.
-- name: NamespaceOwnersClear :many
DELETE FROM namespace_owners WHERE namespace = $1 RETURNING user_id;

-- SigningKeysRetireAll retires every key of a namespace.
-- name: SigningKeysRetireAll :exec
UPDATE signing_keys SET retired_at = coalesce(retired_at, now()) WHERE namespace = $1;

-- name: NamespaceGetForUpdate :one
SELECT * FROM namespaces WHERE name = $1 FOR UPDATE;

-- name: NamespacesReserved :many
SELECT * FROM namespaces WHERE reserved ORDER BY name;

-- NamespaceOwnersOf are the owners of the namespaces named, by namespace: those of many
-- namespaces in one query.
-- name: NamespaceOwnersOf :many
SELECT namespace, user_id FROM namespace_owners
WHERE namespace = ANY(@names::text[])
ORDER BY namespace, added_at, user_id;

-- SigningKeysOf are the keys of the namespaces named, by namespace.
-- name: SigningKeysOf :many
SELECT * FROM signing_keys
WHERE namespace = ANY(@names::text[])
ORDER BY namespace, created_at, id;
