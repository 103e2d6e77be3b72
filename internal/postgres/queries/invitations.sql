-- name: InvitationInsert :one
INSERT INTO invitations (
    id, code_hash, role,
    license_plan, license_max_vus, license_max_run_seconds, license_max_concurrent_runs, license_valid_days,
    uses_total, uses_left, expires_at, note, created_by, license_quotas
) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10, $11, $12, $13)
RETURNING *;

-- InvitationRedeem spends one use atomically: of concurrent redemptions of the last use, exactly
-- one gets the row.
-- name: InvitationRedeem :one
UPDATE invitations SET uses_left = uses_left - 1
WHERE code_hash = $1 AND uses_left > 0 AND revoked_at IS NULL AND expires_at > now()
RETURNING *;

-- name: InvitationGetByCodeHash :one
SELECT * FROM invitations WHERE code_hash = $1;

-- name: InvitationList :many
SELECT * FROM invitations
WHERE sqlc.narg(before)::uuid IS NULL OR id < sqlc.narg(before)::uuid
ORDER BY id DESC
LIMIT @max_rows;

-- InvitationUses are the accounts made with any of the invitations whose ids are given, by
-- invitation and oldest first within each: a page of invitations' uses in one query.
-- name: InvitationUses :many
SELECT invitation_id::uuid AS invitation_id, id, email, name, created_at FROM users
WHERE invitation_id = ANY(@ids::uuid[])
ORDER BY invitation_id, created_at, id;

-- name: InvitationRevoke :one
UPDATE invitations SET revoked_at = coalesce(revoked_at, now())
WHERE id = $1
RETURNING *;

-- name: InvitationCountActiveAdmin :one
SELECT count(*) FROM invitations
WHERE role = 'admin' AND uses_left > 0 AND revoked_at IS NULL AND expires_at > now();
