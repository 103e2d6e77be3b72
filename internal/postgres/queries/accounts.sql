
-- UserUsage is what a user keeps, as quotas count it: the bytes they uploaded (tests' revisions
-- and data files, scripts they uploaded rather than generated, plugin artifacts pending or
-- published) and the number of their tests, namespaces, versions pending review and targets.
-- name: UserUsage :one
SELECT
  ((SELECT coalesce(sum(length(r.source)), 0) FROM test_revisions r JOIN tests t ON t.id = r.test_id WHERE t.owner_id = @user_id)
 + (SELECT coalesce(sum(length(f.content)), 0) FROM test_files f JOIN tests t ON t.id = f.test_id WHERE t.owner_id = @user_id)
 + (SELECT coalesce(sum(length(s.source)), 0) FROM scripts s WHERE s.owner_id = @user_id AND s.manifest->>'test_id' IS NULL)
 + (SELECT coalesce(sum(length(f.content)), 0) FROM script_files f JOIN scripts s ON s.id = f.script_id
    WHERE s.owner_id = @user_id AND s.manifest->>'test_id' IS NULL)
 + (SELECT coalesce(sum(a.size), 0) FROM plugin_artifacts a JOIN plugin_versions v USING (namespace, name, version)
    WHERE v.published_by = @user_id AND v.state IN ('pending', 'published', 'deprecated')))::bigint AS storage_bytes,
  (SELECT count(*) FROM tests WHERE owner_id = @user_id)::bigint AS tests,
  (SELECT count(*) FROM namespace_owners WHERE user_id = @user_id)::bigint AS namespaces,
  (SELECT count(*) FROM plugin_versions WHERE published_by = @user_id AND state = 'pending')::bigint AS pending_versions,
  (SELECT count(*) FROM targets WHERE owner_id = @user_id)::bigint AS targets;
