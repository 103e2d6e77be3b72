-- name: ScriptInsert :one
INSERT INTO scripts (id, owner_id, project_id, name, source, sha256, manifest)
VALUES (@id, @owner_id, @project_id, @name, @source, @sha256, @manifest)
RETURNING *;

-- FileContentInsert keeps a file's content for its owner, once: scripts name it by its digest.
-- name: FileContentInsert :exec
INSERT INTO file_contents (owner_id, sha256, content) VALUES (@owner_id, @sha256, @content)
ON CONFLICT DO NOTHING;

-- name: ScriptFileInsert :exec
INSERT INTO script_files (script_id, name, sha256) VALUES ($1, $2, $3);

-- ScriptSame finds the project's script that is the one about to be made: the same source and
-- manifest (test, revision, plugins, files by digest). Generating a test's revision again, or
-- running it again, makes no copy.
-- name: ScriptSame :one
SELECT * FROM scripts
WHERE project_id = @project_id AND sha256 = @sha256 AND name = @name AND manifest = @manifest
ORDER BY created_at LIMIT 1;

-- name: ScriptGet :one
SELECT * FROM scripts WHERE id = @id AND project_id = ANY(@projects::uuid[]);

-- ScriptGetForShard reads the script of a shard the agent holds: agents have no owner to scope
-- by, the shard is their scope.
-- name: ScriptGetForShard :one
SELECT scripts.* FROM scripts
JOIN runs ON runs.script_id = scripts.id
JOIN shards ON shards.run_id = runs.id
WHERE shards.id = @shard_id AND shards.agent_id = @agent_id;

-- name: ScriptFileList :many
SELECT f.name, c.content, f.sha256 FROM script_files f
JOIN scripts s ON s.id = f.script_id
JOIN file_contents c ON c.owner_id = s.owner_id AND c.sha256 = f.sha256
WHERE f.script_id = $1 ORDER BY f.name;
