-- name: AgentInsert :one
INSERT INTO agents (id, name, owner_id, project_id, token_hash, max_vus, max_run_seconds)
VALUES (@id, @name, @owner_id, @project_id, @token_hash, @max_vus, @max_run_seconds)
RETURNING *;

-- AgentListUsable lists the agents of the projects given and the shared ones, with whether each
-- holds a running shard.
-- name: AgentListUsable :many
SELECT sqlc.embed(agents), EXISTS (SELECT 1 FROM shards WHERE shards.agent_id = agents.id AND shards.state IN ('pending', 'running'))::boolean AS busy
FROM agents
WHERE (agents.project_id = ANY(@projects::uuid[]) OR agents.owner_id IS NULL)
ORDER BY (agents.owner_id IS NULL), agents.name, agents.id;

-- name: AgentListAll :many
SELECT sqlc.embed(agents), EXISTS (SELECT 1 FROM shards WHERE shards.agent_id = agents.id AND shards.state IN ('pending', 'running'))::boolean AS busy
FROM agents
ORDER BY (agents.owner_id IS NULL), agents.name, agents.id;

-- AgentGetUsable reads one agent of the projects given, or a shared one.
-- name: AgentGetUsable :one
SELECT sqlc.embed(agents), EXISTS (SELECT 1 FROM shards WHERE shards.agent_id = agents.id AND shards.state IN ('pending', 'running'))::boolean AS busy
FROM agents
WHERE agents.id = @id AND (agents.project_id = ANY(@projects::uuid[]) OR agents.owner_id IS NULL);

-- name: AgentGetByTokenHash :one
SELECT * FROM agents WHERE token_hash = $1;

-- name: AgentSeen :exec
UPDATE agents SET last_seen_at = now(), version = @version, cores = @cores, last_ip = @last_ip, sandbox = @sandbox, protocol = @protocol
WHERE id = @id;

-- AgentTouch records that the agent reported: at most once a second, which is all the online
-- state needs, so that agents reporting every second do not rewrite their row each time.
-- name: AgentTouch :exec
UPDATE agents SET last_seen_at = now() WHERE id = $1 AND (last_seen_at IS NULL OR last_seen_at < now() - interval '1 second');

-- AgentDelete removes an agent: a private one of the projects given (projects not NULL), a
-- shared one (projects NULL: an admin's).
-- name: AgentDelete :execrows
DELETE FROM agents
WHERE id = @id AND ((sqlc.narg(projects)::uuid[] IS NOT NULL AND project_id = ANY(sqlc.narg(projects)::uuid[]))
                    OR (sqlc.narg(projects)::uuid[] IS NULL AND owner_id IS NULL));

-- name: AgentPingInsert :exec
INSERT INTO agent_pings (id, agent_id) VALUES ($1, $2);

-- AgentPingTake hands the agent its pings not yet delivered (recent ones: an old ping's asker
-- has given up).
-- name: AgentPingTake :many
UPDATE agent_pings SET delivered_at = now()
WHERE id IN (
    SELECT p.id FROM agent_pings p
    WHERE p.agent_id = @agent_id AND p.delivered_at IS NULL AND p.created_at > now() - interval '10 seconds'
    FOR UPDATE SKIP LOCKED
)
RETURNING id;

-- name: AgentPingAnswer :one
UPDATE agent_pings SET answered_at = now()
WHERE id = @id AND agent_id = @agent_id AND answered_at IS NULL
RETURNING *;

-- name: AgentPingGet :one
SELECT * FROM agent_pings WHERE id = $1;

-- name: AgentPingDeleteOld :execrows
DELETE FROM agent_pings WHERE created_at < @before;

-- AgentLockForRun locks the agents a run is being admitted on, in one order, until the
-- transaction ends: two runs admitted at once on one agent are admitted one after the other.
-- name: AgentLockForRun :many
SELECT id FROM agents WHERE id = ANY(@ids::uuid[]) ORDER BY id FOR UPDATE;

-- AgentsBusy lists those of the agents that hold a shard not yet ended (waiting or running).
-- name: AgentsBusy :many
SELECT DISTINCT agent_id::uuid FROM shards WHERE agent_id = ANY(@ids::uuid[]) AND state IN ('pending', 'running');

-- AgentCountSeenSince counts the enabled agents seen since a time, for the server's metrics.
-- name: AgentCountSeenSince :one
SELECT count(*) FROM agents WHERE NOT disabled AND last_seen_at >= @since;

-- name: AgentCountOwned :one
SELECT count(*) FROM agents WHERE owner_id = @owner_id;

-- AgentWorkWaiting says whether the agent has anything to be handed: a shard (as ShardLease finds it), pings
-- (as AgentPingTake finds them) or jobs (as AgentJobNext and AgentJobAnswerOrphans find them).
-- A waiting lease asks it at each look, one round trip, and takes only when there is something.
-- name: AgentWorkWaiting :one
SELECT (EXISTS (SELECT 1 FROM shards s WHERE s.agent_id = @agent_id
                AND (s.state = 'pending' OR (s.state = 'running' AND s.heartbeat_at = s.leased_at
                    AND s.leased_at > now() - interval '4 seconds'
                    AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = s.run_id AND (r.stop_state IS NOT NULL OR r.ended_at IS NOT NULL)))))
    OR EXISTS (SELECT 1 FROM agent_pings p
               WHERE p.agent_id = @agent_id AND p.delivered_at IS NULL AND p.created_at > now() - interval '10 seconds')
    OR EXISTS (SELECT 1 FROM agent_jobs j
               WHERE j.agent_id = @agent_id AND j.delivered_at IS NULL
                 AND (j.created_at > sqlc.arg(jobs_since)::timestamptz OR j.test_id IS NULL)))::boolean AS waiting;
