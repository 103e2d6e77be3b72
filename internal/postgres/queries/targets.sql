-- TargetLock makes an account's registrations of targets take turns, so that the count the
-- insert checks holds.
-- name: TargetLock :exec
SELECT pg_advisory_xact_lock(hashtext('barrage.targets:' || sqlc.arg(owner_id)::text));

-- name: TargetInsert :one
INSERT INTO targets (id, owner_id, project_id, scheme, host, port, token)
SELECT @id, @owner_id, @project_id, @scheme, @host, @port, @token
WHERE (SELECT count(*) FROM targets WHERE owner_id = @owner_id) < @max_targets::bigint
RETURNING *;

-- name: TargetGet :one
SELECT * FROM targets WHERE id = @id AND project_id = ANY(@projects::uuid[]);

-- name: TargetList :many
SELECT * FROM targets WHERE project_id = ANY(@projects::uuid[]) ORDER BY host, port, id;

-- name: TargetDelete :execrows
DELETE FROM targets WHERE id = @id AND project_id = ANY(@projects::uuid[]);

-- TargetChecked records a check's outcome: verified_at moves to its time when it proved control
-- (from address) and is cleared when it did not.
-- name: TargetChecked :one
UPDATE targets
SET checked_at = @checked_at::timestamptz,
    verified_at = CASE WHEN @check_error::text = '' THEN @checked_at::timestamptz ELSE NULL END,
    check_error = @check_error::text,
    address = @address::text
WHERE id = @id AND project_id = ANY(@projects::uuid[])
RETURNING *;
