-- name: RefreshTokenInsert :exec
INSERT INTO refresh_tokens (id, user_id, family_id, token_hash, expires_at)
VALUES ($1, $2, $3, $4, $5);

-- RefreshTokenUse marks a live token used, once: a second use finds no row.
-- name: RefreshTokenUse :one
UPDATE refresh_tokens SET used_at = now()
WHERE token_hash = $1 AND used_at IS NULL AND revoked_at IS NULL AND expires_at > now()
RETURNING *;

-- name: RefreshTokenGetByHash :one
SELECT * FROM refresh_tokens WHERE token_hash = $1;

-- name: RefreshTokenRevokeFamily :exec
UPDATE refresh_tokens SET revoked_at = now()
WHERE family_id = $1 AND revoked_at IS NULL;

-- name: RefreshTokenRevokeByUser :exec
UPDATE refresh_tokens SET revoked_at = now()
WHERE user_id = $1 AND revoked_at IS NULL;

-- name: RefreshTokenDeleteExpired :execrows
DELETE FROM refresh_tokens WHERE expires_at < $1;
