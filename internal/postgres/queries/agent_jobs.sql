-- name: AgentJobInsert :exec
INSERT INTO agent_jobs (id, agent_id, owner_id, kind, test_id, revision) VALUES ($1, $2, $3, $4, $5, $6);

-- AgentJobTake hands the agent its jobs not yet delivered (recent ones: an old job's asker has
-- given up).
-- name: AgentJobTake :many
UPDATE agent_jobs SET delivered_at = now()
WHERE id IN (
    SELECT j.id FROM agent_jobs j
    WHERE j.agent_id = @agent_id AND j.delivered_at IS NULL AND j.created_at > @since
    FOR UPDATE SKIP LOCKED
)
RETURNING *;

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
