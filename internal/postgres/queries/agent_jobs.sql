-- name: AgentJobInsert :exec
INSERT INTO agent_jobs (id, agent_id, owner_id, kind, test_id, revision, plugins) VALUES ($1, $2, $3, $4, $5, $6, $7);

-- AgentJobNext picks the waiting jobs to hand to an agent (recent ones: the asker of an older one
-- has given up) while the agent has free slots: at most slots under way on it at once, at most
-- per_owner of them of one owner, and owners in turn (the owner with fewer jobs under way goes
-- first), so that the slow jobs of one user cannot hold a shared agent. A job handed over after
-- since and not answered is under way. Jobs whose test is gone are left to
-- AgentJobAnswerOrphans. Callers hold AgentJobLock, so that two takes at once cannot both fill
-- the last slot.
-- name: AgentJobNext :many
WITH busy AS (
    SELECT u.owner_id, count(*) AS n FROM agent_jobs u
    WHERE u.agent_id = sqlc.arg(agent_id) AND u.delivered_at > sqlc.arg(since)::timestamptz AND u.answered_at IS NULL
    GROUP BY u.owner_id
), waiting AS (
    SELECT j.id, j.created_at,
        coalesce(b.n, 0) + row_number() OVER (PARTITION BY j.owner_id ORDER BY j.created_at) AS turn
    FROM agent_jobs j LEFT JOIN busy b ON b.owner_id = j.owner_id
    WHERE j.agent_id = sqlc.arg(agent_id) AND j.delivered_at IS NULL AND j.created_at > sqlc.arg(since)::timestamptz AND j.test_id IS NOT NULL
)
SELECT w.id FROM waiting w WHERE w.turn <= sqlc.arg(per_owner)::bigint
ORDER BY w.turn, w.created_at
LIMIT greatest(sqlc.arg(slots)::bigint - (SELECT coalesce(sum(busy.n), 0) FROM busy)::bigint, 0);

-- name: AgentJobDeliver :many
UPDATE agent_jobs SET delivered_at = now() WHERE id = ANY(@ids::uuid[]) RETURNING *;

-- AgentJobAnswerOrphans answers the waiting jobs of an agent whose test was deleted.
-- name: AgentJobAnswerOrphans :many
UPDATE agent_jobs SET delivered_at = now(), answered_at = now(), error = @reason::text
WHERE agent_id = @agent_id AND delivered_at IS NULL AND test_id IS NULL
RETURNING id;

-- name: AgentJobAnswer :one
UPDATE agent_jobs SET answered_at = now(), result = @result, error = @error
WHERE id = @id AND agent_id = @agent_id AND delivered_at IS NOT NULL AND answered_at IS NULL
RETURNING *;

-- name: AgentJobGet :one
SELECT * FROM agent_jobs WHERE id = $1;

-- name: AgentJobDeleteOld :execrows
DELETE FROM agent_jobs WHERE created_at < @before;

-- AgentJobOpenCount counts the owner's jobs still waiting for an answer, created after since.
-- name: AgentJobOpenCount :one
SELECT count(*) FROM agent_jobs WHERE owner_id = @owner_id AND answered_at IS NULL AND created_at > @since;

-- AgentJobLock serialises the takes of the jobs of one agent (by its id as text) until the
-- transaction ends.
-- name: AgentJobLock :exec
SELECT pg_advisory_xact_lock(hashtextextended($1::text, 7));
