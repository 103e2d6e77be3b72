-- PluginUpsert makes the plugin on its first version; later versions leave it to PluginRefresh.
-- name: PluginUpsert :exec
INSERT INTO plugins (namespace, name, latest, kinds, description, license, source_url, tags, search_text)
VALUES (@namespace, @name, @latest, @kinds, @description, @license, @source_url, @tags, @search_text)
ON CONFLICT (namespace, name) DO NOTHING;

-- PluginLock locks the plugin so that its versions' states and its summary change one at a time.
-- name: PluginLock :one
SELECT listed FROM plugins WHERE namespace = $1 AND name = $2 FOR UPDATE;

-- PluginRefresh sets what the plugin shows of itself from version latest: its words, its
-- protocols and its platforms.
-- name: PluginRefresh :exec
UPDATE plugins p SET listed = @listed, latest = @latest, kinds = @kinds, description = @description,
    license = @license, source_url = @source_url, tags = @tags,
    search_text = @search_text,
    -- Changed when what everyone may see changes: a version pending review moves nothing.
    updated_at = CASE WHEN p.listed IS DISTINCT FROM @listed OR p.latest IS DISTINCT FROM @latest THEN now() ELSE p.updated_at END,
    protocols = (SELECT v.protocols FROM plugin_versions v WHERE v.namespace = p.namespace AND v.name = p.name AND v.version = @latest),
    platforms = ARRAY(SELECT a.os || '/' || a.arch FROM plugin_artifacts a
                      WHERE a.namespace = p.namespace AND a.name = p.name AND a.version = @latest ORDER BY 1)
WHERE p.namespace = @namespace AND p.name = @name;

-- PluginGet reads a plugin that user may see: listed, or with a revoked version (shown for the
-- record), or in one of user's namespaces, or any plugin for an admin.
-- name: PluginGet :one
SELECT p.* FROM plugins p
WHERE p.namespace = @namespace AND p.name = @name
  AND (p.listed OR @admin::boolean
       OR EXISTS (SELECT 1 FROM plugin_versions v WHERE v.namespace = p.namespace AND v.name = p.name AND v.state = 'revoked')
       OR EXISTS (SELECT 1 FROM namespace_owners o WHERE o.namespace = p.namespace AND o.user_id = @user_id));

-- PluginSearch finds the plugins user may see whose words begin with the query's (a tsquery of
-- prefixes), of a namespace, of a kind, with a tag, speaking a protocol and built for a platform when given,
-- ordered by sort (name; downloads, runs or newest, most first, then by name), after the
-- cursor: its sort key negated (0 by name), namespace and name.
-- name: PluginSearch :many
SELECT p.* FROM plugins p
WHERE (p.listed OR @admin::boolean
       OR EXISTS (SELECT 1 FROM namespace_owners o WHERE o.namespace = p.namespace AND o.user_id = @user_id))
  AND (@query::text = '' OR to_tsvector('simple', p.search_text) @@ to_tsquery('simple', @query::text))
  AND (@namespace::text = '' OR p.namespace = @namespace::text)
  AND (@kind::text = '' OR @kind::text = ANY (p.kinds))
  AND (@tag::text = '' OR @tag::text = ANY (p.tags))
  AND (@protocol::integer = 0 OR @protocol::integer = ANY (p.protocols))
  AND (@platform::text = '' OR @platform::text = ANY (p.platforms))
  AND (-(CASE @sort::text WHEN 'downloads' THEN p.downloads WHEN 'runs' THEN p.runs
          WHEN 'newest' THEN (extract(epoch FROM p.created_at) * 1000000)::bigint ELSE 0 END), p.namespace, p.name)
      > (@after_key::bigint, @after_namespace::text, @after_name::text)
ORDER BY -(CASE @sort::text WHEN 'downloads' THEN p.downloads WHEN 'runs' THEN p.runs
          WHEN 'newest' THEN (extract(epoch FROM p.created_at) * 1000000)::bigint ELSE 0 END), p.namespace, p.name
LIMIT @max_rows;

-- name: PluginCountDownload :exec
UPDATE plugins SET downloads = downloads + 1 WHERE namespace = $1 AND name = $2;

-- name: PluginVersionInsert :one
INSERT INTO plugin_versions (namespace, name, version, version_core, kinds, description, readme, license,
    source_url, tags, protocols, config_schema, network, sums, signature, signer, published_by)
VALUES (@namespace, @name, @version, @version_core, @kinds, @description, @readme, @license,
    @source_url, @tags, @protocols, @config_schema, @network, @sums, @signature, @signer, @published_by)
RETURNING *;

-- name: PluginVersionGet :one
SELECT * FROM plugin_versions WHERE namespace = $1 AND name = $2 AND version = $3;

-- name: PluginVersionExists :one
SELECT EXISTS (SELECT 1 FROM plugin_versions WHERE namespace = $1 AND name = $2 AND version_core = $3)::boolean;

-- name: PluginVersions :many
SELECT * FROM plugin_versions WHERE namespace = $1 AND name = $2;

-- name: PluginVersionSetState :one
UPDATE plugin_versions SET state = @state, state_reason = @state_reason, reviewed_by = @reviewed_by, reviewed_at = now()
WHERE namespace = @namespace AND name = @name AND version = @version
RETURNING *;

-- PluginArtifactsPending lists the artifacts of the versions waiting for review.
-- name: PluginArtifactsPending :many
SELECT a.* FROM plugin_artifacts a JOIN plugin_versions v USING (namespace, name, version)
WHERE v.state = 'pending' ORDER BY a.os, a.arch;

-- name: PluginVersionsPending :many
SELECT * FROM plugin_versions WHERE state = 'pending' ORDER BY created_at, namespace, name, version LIMIT @max_rows;

-- name: PluginVersionCountDownload :exec
UPDATE plugin_versions SET downloads = downloads + 1 WHERE namespace = $1 AND name = $2 AND version = $3;

-- name: PluginArtifactInsert :exec
INSERT INTO plugin_artifacts (namespace, name, version, os, arch, file, format, sha256, size)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9);

-- name: PluginArtifacts :many
SELECT * FROM plugin_artifacts WHERE namespace = $1 AND name = $2 AND version = $3 ORDER BY os, arch;

-- PluginArtifactsOf lists the artifacts of many versions of one plugin at once.
-- name: PluginArtifactsOf :many
SELECT * FROM plugin_artifacts WHERE namespace = $1 AND name = $2 ORDER BY version, os, arch;

-- PluginArtifactSums lists the blobs the marketplace keeps: its artifacts', but for those of
-- versions rejected (which nobody may download or run, nor counts against a quota).
-- name: PluginArtifactSums :many
SELECT DISTINCT a.sha256 FROM plugin_artifacts a JOIN plugin_versions v USING (namespace, name, version)
WHERE v.state <> 'rejected';

-- PluginBlobLock holds the lock of the blob of sha256 until the transaction ends: storing a
-- version that uses the blob and deleting it as unused take it, so that they do not cross.
-- name: PluginBlobLock :exec
SELECT pg_advisory_xact_lock(hashtextextended('barrage.plugin-blob:' || @sha256::text, 0));

-- PluginArtifactSumUsed says whether a version's artifact is kept in the blob of sha256.
-- name: PluginArtifactSumUsed :one
SELECT EXISTS (SELECT 1 FROM plugin_artifacts WHERE sha256 = @sha256)::boolean;

-- PluginArtifactUses lists the versions whose artifact has this sha256 (one, but for an author
-- who published the same bytes twice), with whether owner_id owns their namespace.
-- name: PluginArtifactUses :many
SELECT v.namespace, v.name, v.version, v.state, v.state_reason, a.size,
    EXISTS (SELECT 1 FROM namespace_owners o WHERE o.namespace = v.namespace AND o.user_id = sqlc.narg(owner_id)::uuid)::boolean AS owned
FROM plugin_artifacts a JOIN plugin_versions v USING (namespace, name, version)
WHERE a.sha256 = @sha256;

-- PluginVersionCountRun counts a run of a version that is not revoked: none counted, it was
-- revoked meanwhile.
-- name: PluginVersionCountRun :execrows
UPDATE plugin_versions SET runs = runs + 1
WHERE namespace = $1 AND name = $2 AND version = $3 AND state <> 'revoked';

-- PluginCountRun counts a run of one of the plugin's versions.
-- name: PluginCountRun :exec
UPDATE plugins SET runs = runs + 1 WHERE namespace = $1 AND name = $2;

-- PluginVersionsRejectPending rejects every version of a namespace still waiting for review,
-- saying why: its namespace was taken back, and its signers no longer own it.
-- name: PluginVersionsRejectPending :execrows
UPDATE plugin_versions SET state = 'rejected', state_reason = @state_reason, reviewed_by = @reviewed_by, reviewed_at = now()
WHERE namespace = @namespace AND state = 'pending';
