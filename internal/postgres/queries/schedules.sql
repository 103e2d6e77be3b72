-- name: ScheduleInsert :one
INSERT INTO schedules (id, project_id, test_id, owner_id, name, cron, time_zone, revision, agent_ids, agents, load, env, next_at)
VALUES (@id, @project_id, @test_id, @owner_id, @name, @cron, @time_zone, @revision, @agent_ids, @agents, @load, @env, @next_at)
RETURNING *;

-- name: ScheduleGet :one
SELECT * FROM schedules WHERE id = @id AND project_id = ANY(@projects::uuid[]);

-- ScheduleGetByID reads a schedule by id alone, for its firings.
-- name: ScheduleGetByID :one
SELECT * FROM schedules WHERE id = $1;

-- name: ScheduleList :many
SELECT * FROM schedules
WHERE project_id = ANY(@projects::uuid[]) AND (sqlc.narg(test_id)::uuid IS NULL OR test_id = sqlc.narg(test_id)::uuid)
  AND (sqlc.narg(before)::uuid IS NULL OR id < sqlc.narg(before)::uuid)
ORDER BY id DESC
LIMIT @max_rows;

-- SchedulePause pauses a schedule, saying why, or (with paused false) resumes it from next_at.
-- name: SchedulePause :one
UPDATE schedules SET
    paused_at = CASE WHEN @paused::boolean THEN COALESCE(paused_at, now()) ELSE NULL END,
    paused_reason = CASE WHEN @paused::boolean THEN @reason::text ELSE '' END,
    next_at = CASE WHEN @paused::boolean THEN next_at ELSE @next_at::timestamptz END,
    updated_at = now()
WHERE id = @id AND project_id = ANY(@projects::uuid[])
RETURNING *;

-- SchedulePauseByID pauses a schedule for its own reasons (its owner's license expired).
-- name: SchedulePauseByID :exec
UPDATE schedules SET paused_at = COALESCE(paused_at, now()), paused_reason = @reason, updated_at = now() WHERE id = @id;

-- name: ScheduleDelete :execrows
DELETE FROM schedules WHERE id = @id AND project_id = ANY(@projects::uuid[]);

-- ScheduleDue locks the schedules due by now that no other replica holds.
-- name: ScheduleDue :many
SELECT * FROM schedules WHERE paused_at IS NULL AND next_at <= @now ORDER BY next_at LIMIT 100 FOR UPDATE SKIP LOCKED;

-- name: ScheduleAdvance :exec
UPDATE schedules SET next_at = @next_at WHERE id = @id;

-- ScheduleFiringInsert records a firing once: a second for the same instant inserts nothing.
-- name: ScheduleFiringInsert :execrows
INSERT INTO schedule_firings (schedule_id, due_at) VALUES (@schedule_id, @due_at) ON CONFLICT DO NOTHING;

-- name: ScheduleFiringDone :exec
UPDATE schedule_firings SET run_id = @run_id, error = @error, fired_at = now() WHERE schedule_id = @schedule_id AND due_at = @due_at;

-- name: ScheduleFiringList :many
SELECT * FROM schedule_firings WHERE schedule_id = @schedule_id ORDER BY due_at DESC LIMIT @max_rows;

-- name: ProjectOfSchedule :one
SELECT project_id FROM schedules WHERE id = $1;

-- ScheduleFiringMissed records a firing the server was not running for: no run, and why.
-- name: ScheduleFiringMissed :exec
INSERT INTO schedule_firings (schedule_id, due_at, error, fired_at) VALUES (@schedule_id, @due_at, @error, now()) ON CONFLICT DO NOTHING;

-- name: ScheduleCount :one
SELECT count(*) FROM schedules WHERE project_id = $1;
