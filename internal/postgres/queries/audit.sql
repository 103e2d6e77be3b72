-- name: AuditInsert :exec
INSERT INTO audit_events (
    id, at, actor_kind, actor_id, actor_email, token_id, action, object_kind, object_id, subject_id, project_id,
    address, outcome, status, reason, request_id, detail
) VALUES (
    @id, @at, @actor_kind, @actor_id, @actor_email, @token_id, @action, @object_kind, @object_id, @subject_id, @project_id,
    @address, @outcome, @status, @reason, @request_id, @detail
);

-- AuditList reads the audit log newest first, filtered: a filter left NULL keeps every entry. A
-- reader (not an admin) keeps the entries they did, those that concern them, and those of the
-- projects they own; an action is matched whole, or by its object's kind before the dot.
-- name: AuditList :many
SELECT * FROM audit_events
WHERE (sqlc.narg(reader)::uuid IS NULL OR actor_id = sqlc.narg(reader)::uuid OR subject_id = sqlc.narg(reader)::uuid
       OR project_id = ANY(@owned::uuid[]))
  AND (sqlc.narg(project)::uuid IS NULL OR project_id = sqlc.narg(project)::uuid)
  AND (sqlc.narg(actor)::uuid IS NULL OR actor_id = sqlc.narg(actor)::uuid)
  AND (sqlc.narg(action)::text IS NULL OR action = sqlc.narg(action)::text OR action LIKE sqlc.narg(action)::text || '.%')
  AND (sqlc.narg(object_kind)::text IS NULL OR object_kind = sqlc.narg(object_kind)::text)
  AND (sqlc.narg(object_id)::text IS NULL OR object_id = sqlc.narg(object_id)::text)
  AND (sqlc.narg(outcome)::text IS NULL OR outcome = sqlc.narg(outcome)::text)
  AND (sqlc.narg(since)::timestamptz IS NULL OR at >= sqlc.narg(since)::timestamptz)
  AND (sqlc.narg(until)::timestamptz IS NULL OR at < sqlc.narg(until)::timestamptz)
  AND (sqlc.narg(before)::uuid IS NULL OR id < sqlc.narg(before)::uuid)
ORDER BY id DESC
LIMIT @max_rows;
