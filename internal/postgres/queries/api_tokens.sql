-- name: APITokenInsert :one
INSERT INTO api_tokens (id, user_id, name, token_hash, scopes, expires_at, project_id)
VALUES (@id, @user_id, @name, @token_hash, @scopes, @expires_at, @project_id)
RETURNING *;

-- name: APITokenListByUser :many
SELECT * FROM api_tokens
WHERE user_id = @user_id AND (sqlc.narg(before)::uuid IS NULL OR id < sqlc.narg(before)::uuid)
ORDER BY id DESC
LIMIT @max_rows;

-- name: APITokenDelete :execrows
DELETE FROM api_tokens WHERE id = $1 AND user_id = $2;

-- APITokenGetWithUser authenticates a request: the token and its owner in one round trip.
-- name: APITokenGetWithUser :one
SELECT sqlc.embed(api_tokens), sqlc.embed(users)
FROM api_tokens JOIN users ON users.id = api_tokens.user_id
WHERE api_tokens.token_hash = $1;

-- name: APITokenTouch :exec
UPDATE api_tokens SET last_used_at = now() WHERE id = $1;

-- APITokenDeleteByUser revokes every personal API token of a user.
-- name: APITokenDeleteByUser :execrows
DELETE FROM api_tokens WHERE user_id = $1;

-- name: APITokenCountLive :one
SELECT count(*) FROM api_tokens WHERE user_id = @user_id AND expires_at > now();
