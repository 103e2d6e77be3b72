-- name: ScriptInsert :one
INSERT INTO scripts (id, owner_id, name, source, sha256, manifest)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING *;

-- name: ScriptFileInsert :exec
INSERT INTO script_files (script_id, name, content, sha256) VALUES ($1, $2, $3, $4);

-- name: ScriptGet :one
SELECT * FROM scripts WHERE id = @id AND owner_id = @owner_id;

-- ScriptGetForShard reads the script of a shard the agent holds: agents have no owner to scope
-- by, the shard is their scope.
-- name: ScriptGetForShard :one
SELECT scripts.* FROM scripts
JOIN runs ON runs.script_id = scripts.id
JOIN shards ON shards.run_id = runs.id
WHERE shards.id = @shard_id AND shards.agent_id = @agent_id;

-- name: ScriptFileList :many
SELECT * FROM script_files WHERE script_id = $1 ORDER BY name;
