-- name: ShardInsert :exec
INSERT INTO shards (id, run_id, agent_id, seg_from, seg_to, seg_of, state)
VALUES ($1, $2, $3, $4, $5, $6, 'pending');

-- name: ShardListByRun :many
SELECT * FROM shards WHERE run_id = $1 ORDER BY seg_from;

-- ShardLease takes the agent's shard whose answer it never got, or else its oldest pending
-- shard, raising its fencing token. An agent runs one shard at a time and asks for work only
-- between shards, so a shard it holds running that no report of its has touched since its
-- lease (its heartbeat still the lease's), asked for again within 4 s of that lease, is one
-- whose answer was lost: a replica that died between the lease's commit and its answer, or an
-- agent restarted at once. It is handed again under a new token rather than lost, unless its
-- run was stopped or ended. Its lease and heartbeat keep their times: asking again does not
-- keep a shard alive, which is lost as any other when no report comes (a second holder of the
-- agent's token, which a re-lease also serves, is refused at its first report).
-- name: ShardLease :one
UPDATE shards SET state = 'running', lease = lease + 1,
    leased_at = CASE WHEN shards.state = 'pending' THEN now() ELSE shards.leased_at END,
    heartbeat_at = CASE WHEN shards.state = 'pending' THEN now() ELSE shards.heartbeat_at END,
    agent_version = @agent_version
WHERE id = (
    SELECT s.id FROM shards s
    WHERE s.agent_id = @agent_id AND (s.state = 'pending' OR (s.state = 'running' AND s.heartbeat_at = s.leased_at
        AND s.leased_at > now() - interval '4 seconds'
        AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = s.run_id AND (r.stop_state IS NOT NULL OR r.ended_at IS NOT NULL))))
    ORDER BY s.state = 'pending', s.id
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

-- ShardEndBatch ends the shards of one run, each with its own account, that their agents hold
-- under their leases and that still run, for the ends that arrived together, in one statement;
-- it answers the shards it ended. The caller holds the run's lock (RunLockForEnds).
-- name: ShardEndBatch :many
UPDATE shards SET state = e.state, reason = e.reason, ended_at = now(), late_start_ms = e.late_start_ms,
    result = e.result, heartbeat_at = now()
FROM (SELECT unnest(@ids::uuid[]) AS id, unnest(@agent_ids::uuid[]) AS agent_id, unnest(@leases::bigint[]) AS lease,
             unnest(@states::text[]) AS state, unnest(@reasons::text[]) AS reason,
             unnest(@late_start_ms::bigint[]) AS late_start_ms, unnest(@results::jsonb[]) AS result) AS e
WHERE shards.id = e.id AND shards.agent_id = e.agent_id AND shards.lease = e.lease AND shards.state = 'running'
  AND shards.run_id = @run_id
RETURNING shards.id;

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

-- ShardSecondListNewByRun reads the seconds of a run's shards from the given one on that a
-- follower has not read: for each shard in seen_shards, those after its seen_idx. A shard's
-- seconds commit in order (its agent sends a report once the one before was answered), so a
-- follower that read a shard's second has read every earlier one; a live view that read the
-- open seconds again at each wake read each report a hundred times over.
-- name: ShardSecondListNewByRun :many
SELECT shard_seconds.* FROM shard_seconds
JOIN shards ON shards.id = shard_seconds.shard_id
LEFT JOIN (SELECT unnest(@seen_shards::uuid[]) AS shard_id, unnest(@seen_idx::bigint[]) AS idx) AS seen
    ON seen.shard_id = shard_seconds.shard_id
WHERE shards.run_id = @run_id AND shard_seconds.idx >= @from_idx AND (seen.idx IS NULL OR shard_seconds.idx > seen.idx)
ORDER BY shard_seconds.idx, shard_seconds.shard_id;

-- ShardReportBatch stores the seconds agents report of shards they hold under lease and
-- running, for the reports that arrived together (one shard each, the seconds listed with the
-- shard they belong to), in one statement: one round trip, one commit. For each shard: its
-- heartbeat, its seconds (those stored before are skipped), its agent's, its run running from
-- its first second, and the runs' followers told when a second was stored. work_waiting says
-- whether the agent has pings or jobs waiting (as AgentPingTake, AgentJobNext and
-- AgentJobAnswerOrphans would find them), so that a report looks for them only then. It answers a row for each shard that is its agent's, under
-- its lease, running; the others' reports go through ReportShard's transaction, which says why.
-- name: ShardReportBatch :many
WITH sh AS (
    UPDATE shards SET heartbeat_at = now()
    FROM (SELECT unnest(@ids::uuid[]) AS id, unnest(@agent_ids::uuid[]) AS agent_id, unnest(@leases::bigint[]) AS lease) AS r
    WHERE shards.id = r.id AND shards.agent_id = r.agent_id AND shards.lease = r.lease AND shards.state = 'running'
    RETURNING shards.id, shards.run_id, shards.agent_id
), ins AS (
    INSERT INTO shard_seconds (shard_id, idx, snapshot, health, monitors)
    SELECT s.shard_id, s.idx, s.snapshot, s.health, s.monitors
    FROM (SELECT unnest(@sec_shards::uuid[]) AS shard_id, unnest(@idxs::bigint[]) AS idx, unnest(@snapshots::bytea[]) AS snapshot,
                 unnest(@healths::jsonb[]) AS health, unnest(@monitors::jsonb[]) AS monitors) AS s
    WHERE s.shard_id IN (SELECT sh.id FROM sh)
    ON CONFLICT DO NOTHING
    RETURNING shard_seconds.shard_id
), touch AS (
    UPDATE agents SET last_seen_at = now()
    WHERE agents.id IN (SELECT sh.agent_id FROM sh)
      AND (agents.last_seen_at IS NULL OR agents.last_seen_at < now() - interval '1 second')
), running AS (
    UPDATE runs SET state = 'running'
    WHERE runs.id IN (SELECT sh.run_id FROM sh WHERE sh.id IN (SELECT ins.shard_id FROM ins)) AND runs.state IN ('queued', 'starting')
    RETURNING runs.id
), told AS (
    SELECT count(pg_notify(@channel::text, d.run_id::text)) AS n
    FROM (SELECT DISTINCT sh.run_id FROM sh WHERE sh.id IN (SELECT ins.shard_id FROM ins)) AS d
)
SELECT sh.id AS shard_id, sqlc.embed(runs),
    (SELECT count(*) FROM ins WHERE ins.shard_id = sh.id) AS stored,
    EXISTS (SELECT 1 FROM running WHERE running.id = runs.id) AS now_running,
    (SELECT told.n FROM told) AS told,
    (EXISTS (SELECT 1 FROM agent_pings p
             WHERE p.agent_id = sh.agent_id AND p.delivered_at IS NULL AND p.created_at > now() - interval '10 seconds')
     OR EXISTS (SELECT 1 FROM agent_jobs j
                WHERE j.agent_id = sh.agent_id AND j.delivered_at IS NULL
                  AND (j.created_at > sqlc.arg(jobs_since)::timestamptz OR j.test_id IS NULL)))::boolean AS work_waiting
FROM sh JOIN runs ON runs.id = sh.run_id;
