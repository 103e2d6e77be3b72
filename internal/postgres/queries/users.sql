-- name: UserInsert :one
INSERT INTO users (
    id, email, name, password_hash, role,
    license_plan, license_max_vus, license_max_run_seconds, license_max_concurrent_runs, license_valid_until,
    license_quotas, invitation_id
) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
RETURNING *;

-- name: UserGetByID :one
SELECT * FROM users WHERE id = $1;

-- name: UserGetByIDForUpdate :one
SELECT * FROM users WHERE id = $1 FOR UPDATE;

-- name: UserGetByEmail :one
SELECT * FROM users WHERE lower(email) = lower(@email::text);

-- UserList lists users by id after the one with id after; with a pattern, those whose email or
-- name it matches (ILIKE, escaped with a backslash), else every one.
-- name: UserList :many
SELECT * FROM users
WHERE (sqlc.narg(after)::uuid IS NULL OR id > sqlc.narg(after)::uuid)
  AND (sqlc.narg(pattern)::text IS NULL
       OR email ILIKE sqlc.narg(pattern)::text ESCAPE '\'
       OR name ILIKE sqlc.narg(pattern)::text ESCAPE '\')
ORDER BY id
LIMIT @max_rows;

-- name: UserCount :one
SELECT count(*) FROM users;

-- name: UserUpdate :one
UPDATE users SET
    email = $2,
    name = $3,
    password_hash = $4,
    role = $5,
    disabled = $6,
    license_plan = $7,
    license_max_vus = $8,
    license_max_run_seconds = $9,
    license_max_concurrent_runs = $10,
    license_valid_until = $11,
    tokens_valid_after = $12,
    license_quotas = $13,
    updated_at = now()
WHERE id = $1
RETURNING *;

-- UserGetForTokenChange locks the user's row before any change to its refresh tokens. Rotation,
-- revocation and UserUpdate all take this row first, so they serialise per user in one lock
-- order: no deadlock, and no token minted behind a revocation's back.
-- name: UserGetForTokenChange :one
SELECT * FROM users WHERE id = $1 FOR NO KEY UPDATE;

-- name: SignInAddressTouch :exec
INSERT INTO sign_in_addresses (user_id, client, last_at) VALUES (@user_id, @client, @at)
ON CONFLICT (user_id, client) DO UPDATE SET last_at = excluded.last_at;

-- SignInAddressKnown says whether the user signed in from client since since.
-- name: SignInAddressKnown :one
SELECT EXISTS (SELECT 1 FROM sign_in_addresses WHERE user_id = @user_id AND client = @client AND last_at >= @since)::boolean;

-- UserGuessed records that the user's password is being guessed from many addresses (unless
-- guessing recorded after since); it reports whether this is news.
-- name: UserGuessed :execrows
UPDATE users SET guessed_at = @at WHERE id = @id AND (guessed_at IS NULL OR guessed_at < @since);

-- UserGetWithActivity reads a user with what they have done: their personal API tokens alive
-- (a revoked token is deleted, so those not expired), the runs they started in any state, and
-- when the newest was made (NULL when none was).
-- name: UserGetWithActivity :one
SELECT sqlc.embed(users),
    (SELECT count(*) FROM api_tokens t WHERE t.user_id = users.id AND t.expires_at > now())::bigint AS live_tokens,
    (SELECT count(*) FROM runs r WHERE r.owner_id = users.id)::bigint AS runs,
    newest.created_at AS last_run_at
FROM users
LEFT JOIN runs newest ON newest.id = (
    SELECT r.id FROM runs r WHERE r.owner_id = users.id ORDER BY r.created_at DESC, r.id DESC LIMIT 1)
WHERE users.id = $1;
