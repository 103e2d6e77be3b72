-- name: NotificationChannelInsert :one
INSERT INTO notification_channels (id, project_id, created_by, name, kind, target_sealed, target_hint, secret_sealed, events)
VALUES (@id, @project_id, @created_by, @name, @kind, @target_sealed, @target_hint, @secret_sealed, @events)
RETURNING *;

-- name: NotificationChannelGet :one
SELECT * FROM notification_channels WHERE id = @id AND project_id = ANY(@projects::uuid[]);

-- NotificationChannelGetByID reads a channel by id alone, for a delivery's own work.
-- name: NotificationChannelGetByID :one
SELECT * FROM notification_channels WHERE id = $1;

-- name: NotificationChannelList :many
SELECT * FROM notification_channels
WHERE project_id = ANY(@projects::uuid[]) AND (sqlc.narg(before)::uuid IS NULL OR id < sqlc.narg(before)::uuid)
ORDER BY id DESC
LIMIT @max_rows;

-- NotificationChannelUpdate renames a channel, changes its events, and pauses or resumes it
-- (a resumed channel starts its count of failures afresh).
-- name: NotificationChannelUpdate :one
UPDATE notification_channels SET
    name = COALESCE(sqlc.narg(name)::text, name),
    events = COALESCE(sqlc.narg(events)::text[], events),
    paused_at = CASE WHEN sqlc.narg(paused)::boolean IS NULL THEN paused_at
                     WHEN sqlc.narg(paused)::boolean THEN COALESCE(paused_at, now()) ELSE NULL END,
    paused_reason = CASE WHEN sqlc.narg(paused)::boolean IS NULL THEN paused_reason
                         WHEN sqlc.narg(paused)::boolean THEN sqlc.arg(paused_reason)::text ELSE '' END,
    failures = CASE WHEN sqlc.narg(paused)::boolean = false THEN 0 ELSE failures END,
    updated_at = now()
WHERE id = @id AND project_id = ANY(@projects::uuid[])
RETURNING *;

-- name: NotificationChannelDelete :execrows
DELETE FROM notification_channels WHERE id = @id AND project_id = ANY(@projects::uuid[]);

-- NotificationChannelsFor are a project's channels that want an event and are not paused.
-- name: NotificationChannelsFor :many
SELECT * FROM notification_channels
WHERE project_id = @project_id AND sqlc.arg(event)::text = ANY(events) AND paused_at IS NULL
ORDER BY id;

-- NotificationChannelCount counts a project's channels, under its lock.
-- name: NotificationChannelCount :one
SELECT count(*) FROM notification_channels WHERE project_id = $1;

-- NotificationChannelFailed counts a delivery that failed every attempt, and pauses the channel,
-- saying why, when that makes pause_after in a row.
-- name: NotificationChannelFailed :one
UPDATE notification_channels SET
    failures = failures + 1,
    paused_at = CASE WHEN failures + 1 >= sqlc.arg(pause_after)::int THEN COALESCE(paused_at, now()) ELSE paused_at END,
    paused_reason = CASE WHEN failures + 1 >= sqlc.arg(pause_after)::int AND paused_at IS NULL THEN sqlc.arg(reason)::text ELSE paused_reason END
WHERE id = @id
RETURNING *;

-- name: NotificationChannelSucceeded :exec
UPDATE notification_channels SET failures = 0 WHERE id = $1 AND failures > 0;

-- name: NotificationDeliveryInsert :exec
INSERT INTO notification_deliveries (id, channel_id, event, payload) VALUES (@id, @channel_id, @event, @payload);

-- name: NotificationDeliveryGet :one
SELECT * FROM notification_deliveries WHERE id = $1;

-- NotificationDeliveryAttempted records an attempt of a pending delivery: its outcome, and its
-- end when it was delivered or was the last.
-- name: NotificationDeliveryAttempted :one
UPDATE notification_deliveries SET
    attempts = attempts + 1, attempted_at = now(), last_status = sqlc.narg(last_status), last_error = @last_error,
    state = @state, done_at = CASE WHEN @state::text = 'pending' THEN NULL ELSE now() END
WHERE id = @id AND state = 'pending'
RETURNING *;

-- name: NotificationDeliveryList :many
SELECT * FROM notification_deliveries
WHERE channel_id = @channel_id AND (sqlc.narg(before)::uuid IS NULL OR id < sqlc.narg(before)::uuid)
ORDER BY id DESC
LIMIT @max_rows;

-- AgentsWentOffline marks the agents of projects that went silent before @before since they
-- were last told of, and returns them: each is told once per time it goes offline.
-- name: AgentsWentOffline :many
UPDATE agents SET offline_told_at = now()
WHERE project_id IS NOT NULL AND NOT disabled AND last_seen_at IS NOT NULL AND last_seen_at < @before
  AND (offline_told_at IS NULL OR offline_told_at < last_seen_at)
RETURNING *;

