-- name: ShardInsert :exec
INSERT INTO shards (id, run_id, agent_id, seg_from, seg_to, seg_of, state)
VALUES ($1, $2, $3, $4, $5, $6, 'pending');

-- name: ShardListByRun :many
SELECT * FROM shards WHERE run_id = $1 ORDER BY seg_from;

-- ShardLease takes the oldest pending shard of the agent, raising its fencing token.
-- name: ShardLease :one
UPDATE shards SET state = 'running', lease = lease + 1, leased_at = now(), heartbeat_at = now(),
    agent_version = @agent_version
WHERE id = (
    SELECT s.id FROM shards s
    WHERE s.agent_id = @agent_id AND s.state = 'pending'
    ORDER BY s.id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
)
RETURNING *;

-- ShardHeartbeat records a report of the agent's shard and locks the shard for the rest of the
-- report's transaction; the caller checks the lease and state it returns (and rolls back when
-- they are not the reporter's).
-- name: ShardHeartbeat :one
UPDATE shards SET heartbeat_at = now() WHERE id = @id AND agent_id = @agent_id
RETURNING *;

-- name: ShardEnd :exec
UPDATE shards SET state = @state, reason = @reason, ended_at = now(), late_start_ms = @late_start_ms,
    result = @result
WHERE id = @id AND state IN ('pending', 'running');

-- ShardListLost finds running shards whose agent went silent, and locks them.
-- name: ShardListLost :many
SELECT * FROM shards WHERE state = 'running' AND heartbeat_at < @before
FOR UPDATE SKIP LOCKED;

-- name: ShardEndAll :exec
UPDATE shards SET state = @state, reason = @reason, ended_at = now()
WHERE run_id = @run_id AND state IN ('pending', 'running');

-- name: ShardEndPending :exec
UPDATE shards SET state = @state, reason = @reason, ended_at = now()
WHERE run_id = @run_id AND state = 'pending';

-- name: ShardSecondInsert :execrows
INSERT INTO shard_seconds (shard_id, idx, snapshot, health, monitors) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT DO NOTHING;

-- ShardSecondListByRun reads the seconds of a run's shards from the given one on. Followers read
-- by second, not by order of arrival: reports commit in another order than they arrive, and a
-- reader that skipped past an uncommitted one would never see it.
-- name: ShardSecondListByRun :many
SELECT shard_seconds.* FROM shard_seconds
JOIN shards ON shards.id = shard_seconds.shard_id
WHERE shards.run_id = @run_id AND shard_seconds.idx >= @from_idx AND shard_seconds.idx < @to_idx
ORDER BY shard_seconds.idx, shard_seconds.shard_id;

-- name: ShardListByRuns :many
SELECT * FROM shards WHERE run_id = ANY(@run_ids::uuid[]) ORDER BY run_id, seg_from;

-- ShardAccountsByRun reads each shard's own account of a run (iterations, dropped...) and the
-- name of its agent, for the run's report.
-- name: ShardAccountsByRun :many
SELECT shards.id, shards.result, agents.name AS agent_name
FROM shards LEFT JOIN agents ON agents.id = shards.agent_id
WHERE shards.run_id = @run_id
ORDER BY shards.seg_from;
