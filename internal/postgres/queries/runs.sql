-- name: RunInsert :one
INSERT INTO runs (id, owner_id, project_id, script_id, manifest, state, load, max_vus, max_run_seconds, idempotency_key, request_sha256,
                  destinations, vus, dest_addresses)
VALUES (@id, @owner_id, @project_id, @script_id, @manifest, @state, @load, @max_vus, @max_run_seconds, @idempotency_key, @request_sha256,
        @destinations, @vus, @dest_addresses)
RETURNING *;

-- name: RunGet :one
SELECT * FROM runs WHERE id = @id AND project_id = ANY(@projects::uuid[]);

-- name: RunGetByIdempotencyKey :one
SELECT * FROM runs WHERE owner_id = @owner_id AND idempotency_key = @idempotency_key;

-- RunGetByID reads a run by id alone, for agents' and the control plane's own work. It takes no
-- lock: the transactions that write a run update it in one statement, so none upgrades a lock
-- it holds while another waits on the row (which deadlocks).
-- name: RunGetByID :one
SELECT * FROM runs WHERE id = $1;

-- RunList lists the runs of the projects given, newest first; of some states, of one test's scripts, created
-- since an instant and before another, when those are given.
-- name: RunList :many
SELECT * FROM runs
WHERE runs.project_id = ANY(@projects::uuid[]) AND (sqlc.narg(before)::uuid IS NULL OR runs.id < sqlc.narg(before)::uuid)
  AND (sqlc.narg(states)::text[] IS NULL OR runs.state = ANY(sqlc.narg(states)::text[]))
  AND (sqlc.narg(since)::timestamptz IS NULL OR runs.created_at >= sqlc.narg(since)::timestamptz)
  AND (sqlc.narg(until)::timestamptz IS NULL OR runs.created_at < sqlc.narg(until)::timestamptz)
  AND (sqlc.narg(test_id)::uuid IS NULL OR runs.script_id IN (
    SELECT scripts.id FROM scripts WHERE scripts.project_id = ANY(@projects::uuid[]) AND scripts.manifest->>'test_id' = sqlc.narg(test_id)::uuid::text))
ORDER BY runs.id DESC
LIMIT @max_rows;

-- name: RunCountActive :one
SELECT count(*) FROM runs
WHERE owner_id = $1 AND state IN ('created', 'queued', 'starting', 'running');

-- name: RunSetStart :exec
UPDATE runs SET state = 'starting', start_at = @start_at WHERE id = @id AND start_at IS NULL;

-- name: RunSetRunning :exec
UPDATE runs SET state = 'running' WHERE id = @id AND state IN ('queued', 'starting');

-- RunStop asks a run to stop before its end, once: a later request changes nothing.
-- name: RunStop :execrows
UPDATE runs SET stop_state = @stop_state, stop_reason = @stop_reason
WHERE id = @id AND stop_state IS NULL AND ended_at IS NULL;

-- name: RunNotify :exec
SELECT pg_notify(@channel::text, @payload::text);

-- RunEnd ends a run once: a second attempt (another replica's) changes nothing.
-- name: RunEnd :execrows
UPDATE runs SET state = @state, reason = @reason, ended_at = now(), summary = @summary
WHERE id = @id AND ended_at IS NULL;

-- name: RunGetSummary :one
SELECT summary FROM runs WHERE id = @id AND project_id = ANY(@projects::uuid[]);

-- RunListOpen lists the runs not yet ended, for the watchdog.
-- name: RunListOpen :many
SELECT * FROM runs WHERE ended_at IS NULL ORDER BY id;

-- RunLockForShardEnd locks the run of the agent's shard before the shard ends: the shards of a
-- run that end at the same moment then end one after the other, so the last one sees the others
-- ended and queues the run's summary. It is the first lock such a report takes, and the
-- strongest it takes on the run, so it upgrades nothing.
-- name: RunLockForShardEnd :one
SELECT runs.id FROM runs
JOIN shards ON shards.run_id = runs.id
WHERE shards.id = @shard_id AND shards.agent_id = @agent_id
FOR UPDATE OF runs;

-- RunLockForEnds locks a run before the ends of its shards that arrived together (ShardEndBatch),
-- as RunLockForShardEnd does before one.
-- name: RunLockForEnds :one
SELECT id FROM runs WHERE id = $1 FOR UPDATE;

-- RunCountByState counts the runs in each state, for the server's metrics.
-- name: RunCountByState :many
SELECT state, count(*) AS n FROM runs GROUP BY state;

-- DestinationLock makes the creations of runs aimed at proved addresses take turns, so that the
-- cap on the load at one address holds however many are created at once.
-- name: DestinationLock :exec
SELECT pg_advisory_xact_lock(hashtext('barrage.run-destinations'));

-- DestinationLoads sums, for each of the addresses given, the VUs of the runs not ended that aim
-- at it.
-- name: DestinationLoads :many
SELECT a::text AS address, sum(r.vus)::bigint AS vus
FROM runs r, unnest(r.dest_addresses) AS a
WHERE r.state IN ('created', 'queued', 'starting', 'running') AND a = ANY(@addresses::text[])
GROUP BY a
ORDER BY a;

-- RunFactsSave stores what a run's script makes of it, in place of what was stored.
-- name: RunFactsSave :exec
INSERT INTO run_facts (run_id, facts) VALUES (@run_id, @facts)
ON CONFLICT (run_id) DO UPDATE SET facts = EXCLUDED.facts;

-- name: RunFactsGet :one
SELECT facts FROM run_facts WHERE run_id = @run_id;
