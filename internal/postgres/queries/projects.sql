-- ProjectMemberships are the projects a user belongs to, with the role and whether the project
-- is the user's personal one: what a request's principal carries.
-- name: ProjectMemberships :many
SELECT m.project_id, m.role, (p.personal_of IS NOT DISTINCT FROM m.user_id)::boolean AS personal
FROM project_members m JOIN projects p ON p.id = m.project_id
WHERE m.user_id = @user_id;

-- name: ProjectInsert :one
INSERT INTO projects (id, name, created_by) VALUES (@id, @name, @created_by) RETURNING *;

-- name: ProjectMemberInsert :exec
INSERT INTO project_members (project_id, user_id, role, added_by) VALUES (@project_id, @user_id, @role, @added_by);

-- ProjectList lists the user's projects by name, each with the user's role and its members' count.
-- name: ProjectList :many
SELECT p.*, m.role, (SELECT count(*) FROM project_members c WHERE c.project_id = p.id)::bigint AS members
FROM projects p JOIN project_members m ON m.project_id = p.id AND m.user_id = @user_id
ORDER BY (p.personal_of IS NULL), lower(p.name), p.id;

-- name: ProjectGet :one
SELECT p.*, m.role, (SELECT count(*) FROM project_members c WHERE c.project_id = p.id)::bigint AS members
FROM projects p JOIN project_members m ON m.project_id = p.id AND m.user_id = @user_id
WHERE p.id = @id;

-- name: ProjectRename :exec
UPDATE projects SET name = @name WHERE id = @id;

-- ProjectDelete deletes a project that is nobody's personal one, with all it holds.
-- name: ProjectDelete :execrows
DELETE FROM projects WHERE id = @id AND personal_of IS NULL;

-- name: ProjectActiveRuns :one
SELECT count(*) FROM runs WHERE project_id = @project_id AND ended_at IS NULL;

-- name: ProjectMembers :many
SELECT m.user_id, u.email, u.name, m.role, m.added_at
FROM project_members m JOIN users u ON u.id = m.user_id
WHERE m.project_id = @project_id
ORDER BY array_position(ARRAY['owner', 'editor', 'runner', 'viewer'], m.role), lower(u.email);

-- ProjectLock makes the changes to one project's members take turns, so that the count of its
-- owners a change checks holds.
-- name: ProjectLock :one
SELECT personal_of FROM projects WHERE id = @id FOR UPDATE;

-- ProjectsOwnedShared counts the projects to share a user owns (their personal one aside).
-- name: ProjectsOwnedShared :one
SELECT count(*) FROM project_members m JOIN projects p ON p.id = m.project_id
WHERE m.user_id = @user_id AND m.role = 'owner' AND p.personal_of IS NULL;

-- ProjectInvitationsOfInviterDelete withdraws the invitations a member sent who may no longer
-- send them.
-- name: ProjectInvitationsOfInviterDelete :execrows
DELETE FROM project_invitations WHERE project_id = @project_id AND invited_by = @user_id;

-- ProjectAgentsOfMemberDelete retires the private agents a member registered in a project, once
-- they may no longer manage them: their machine would go on receiving its runs and secrets.
-- name: ProjectAgentsOfMemberDelete :execrows
DELETE FROM agents WHERE project_id = @project_id AND owner_id = @user_id;

-- name: ProjectOwnerCount :one
SELECT count(*) FROM project_members WHERE project_id = @project_id AND role = 'owner';

-- name: ProjectMemberRole :one
SELECT role FROM project_members WHERE project_id = @project_id AND user_id = @user_id;

-- name: ProjectMemberSetRole :execrows
UPDATE project_members SET role = @role WHERE project_id = @project_id AND user_id = @user_id;

-- name: ProjectMemberDelete :execrows
DELETE FROM project_members WHERE project_id = @project_id AND user_id = @user_id;

-- ProjectInvitationInsert stores an invitation and returns it as ProjectInvitations reads it.
-- name: ProjectInvitationInsert :one
WITH i AS (
    INSERT INTO project_invitations (id, project_id, user_id, role, invited_by)
    VALUES (@id, @project_id, @user_id, @role, @invited_by)
    RETURNING *
)
SELECT i.*, p.name AS project_name, u.email
FROM i JOIN projects p ON p.id = i.project_id JOIN users u ON u.id = i.user_id;

-- ProjectInvitations lists a project's invitations (project_id given) or a user's (user_id
-- given), oldest first, with the project's name and the invitee's email.
-- name: ProjectInvitations :many
SELECT i.*, p.name AS project_name, u.email
FROM project_invitations i JOIN projects p ON p.id = i.project_id JOIN users u ON u.id = i.user_id
WHERE (sqlc.narg(project_id)::uuid IS NULL OR i.project_id = sqlc.narg(project_id)::uuid)
  AND (sqlc.narg(user_id)::uuid IS NULL OR i.user_id = sqlc.narg(user_id)::uuid)
ORDER BY i.created_at, i.id;

-- ProjectInvitationTake removes an invitation and returns it: once accepted, declined or
-- withdrawn it is gone. The project's or the invitee's id scopes it.
-- name: ProjectInvitationTake :one
DELETE FROM project_invitations
WHERE id = @id AND (sqlc.narg(project_id)::uuid IS NULL OR project_id = sqlc.narg(project_id)::uuid)
  AND (sqlc.narg(user_id)::uuid IS NULL OR user_id = sqlc.narg(user_id)::uuid)
RETURNING *;

-- ProjectOfObject finds the project of an object by its kind's table, for a refusal that names
-- the role it takes (Principal.Denied).
-- name: ProjectOfTest :one
SELECT project_id FROM tests WHERE id = @id;

-- name: ProjectOfScript :one
SELECT project_id FROM scripts WHERE id = @id;

-- name: ProjectOfRun :one
SELECT project_id FROM runs WHERE id = @id;

-- name: ProjectOfTarget :one
SELECT project_id FROM targets WHERE id = @id;

-- name: ProjectOfAgent :one
SELECT project_id::uuid FROM agents WHERE id = @id AND project_id IS NOT NULL;

-- UserIDByEmail finds the user a project invitation names by email.
-- name: UserIDByEmail :one
SELECT id FROM users WHERE lower(email) = lower(@email);

-- name: ProjectOfNotificationChannel :one
SELECT project_id FROM notification_channels WHERE id = $1;
