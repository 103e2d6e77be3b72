
-- UserUsage is what a user keeps, as quotas count it: the bytes they keep (tests' revisions and
-- data files, the sources of scripts they uploaded rather than generated, the scripts' data files
-- that are not a test's file as it is now, plugin artifacts pending or published) and the number
-- of their tests, namespaces claimed, versions pending review and targets.
-- name: UserUsage :one
SELECT
  ((SELECT coalesce(sum(length(r.source)), 0) FROM test_revisions r JOIN tests t ON t.id = r.test_id WHERE t.owner_id = @user_id)
 + (SELECT coalesce(sum(length(f.content)), 0) FROM test_files f JOIN tests t ON t.id = f.test_id WHERE t.owner_id = @user_id)
 + (SELECT coalesce(sum(length(s.source)), 0) FROM scripts s WHERE s.owner_id = @user_id AND s.manifest->>'test_id' IS NULL)
 + (SELECT coalesce(sum(length(c.content)), 0) FROM file_contents c WHERE c.owner_id = @user_id AND NOT EXISTS (
    SELECT 1 FROM test_files f JOIN tests t ON t.id = f.test_id WHERE t.owner_id = @user_id AND f.sha256 = c.sha256))
 + (SELECT coalesce(sum(a.size), 0) FROM plugin_artifacts a JOIN plugin_versions v USING (namespace, name, version)
    WHERE v.published_by = @user_id AND v.state IN ('pending', 'published', 'deprecated')))::bigint AS storage_bytes,
  (SELECT count(*) FROM tests WHERE owner_id = @user_id)::bigint AS tests,
  (SELECT count(*) FROM namespaces WHERE claimed_by = @user_id)::bigint AS namespaces,
  (SELECT count(*) FROM plugin_versions WHERE published_by = @user_id AND state = 'pending')::bigint AS pending_versions,
  (SELECT count(*) FROM targets WHERE owner_id = @user_id)::bigint AS targets;

-- QuotaLock takes the user's quota lock until the transaction ends: a change that adds to what
-- the user keeps reads their usage and writes under it, so two at once cannot both pass.
-- name: QuotaLock :exec
SELECT pg_advisory_xact_lock(hashtextextended('barrage.quota:' || sqlc.arg(user_id)::text, 0));
