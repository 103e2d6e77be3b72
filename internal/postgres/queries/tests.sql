-- name: TestInsert :one
INSERT INTO tests (id, owner_id, project_id, name, latest_revision) VALUES (@id, @owner_id, @project_id, @name, 1)
RETURNING *;

-- name: TestGet :one
SELECT * FROM tests WHERE id = @id AND project_id = ANY(@projects::uuid[]);

-- TestGetForJob reads the test of a job an agent took: the job, asked for by a reader of the
-- test, is the scope.
-- name: TestGetForJob :one
SELECT * FROM tests WHERE id = @id;

-- TestGetForUpdate reads a test of the projects given and locks it, so that two saves number
-- their revisions one after the other.
-- name: TestGetForUpdate :one
SELECT * FROM tests WHERE id = @id AND project_id = ANY(@projects::uuid[]) FOR UPDATE;

-- name: TestList :many
SELECT * FROM tests
WHERE project_id = ANY(@projects::uuid[]) AND (sqlc.narg(before)::uuid IS NULL OR id < sqlc.narg(before)::uuid)
ORDER BY id DESC
LIMIT @max_rows;

-- TestUpdate changes the test TestGetForUpdate locked, in the same transaction.
-- name: TestUpdate :one
UPDATE tests SET name = @name, latest_revision = @latest_revision, updated_at = now()
WHERE id = @id
RETURNING *;

-- name: TestDelete :execrows
DELETE FROM tests WHERE id = @id AND project_id = ANY(@projects::uuid[]);

-- name: TestRevisionInsert :one
INSERT INTO test_revisions (test_id, revision, format, source, sha256) VALUES ($1, $2, $3, $4, $5)
RETURNING *;

-- TestRevisionGet reads one revision of a test; callers have checked the reader may read the test.
-- name: TestRevisionGet :one
SELECT * FROM test_revisions WHERE test_id = @test_id AND revision = @revision;

-- name: TestRevisionList :many
SELECT test_id, revision, format, sha256, length(source)::bigint AS size, created_at
FROM test_revisions WHERE test_id = $1 ORDER BY revision DESC;

-- name: TestFilePut :one
INSERT INTO test_files (test_id, name, content, sha256) VALUES ($1, $2, $3, $4)
ON CONFLICT (test_id, name) DO UPDATE SET content = EXCLUDED.content, sha256 = EXCLUDED.sha256, updated_at = now()
RETURNING test_id, name, sha256, length(content)::bigint AS size, updated_at, (xmax = 0) AS created;

-- name: TestFileGet :one
SELECT * FROM test_files WHERE test_id = @test_id AND name = @name;

-- name: TestFileDelete :execrows
DELETE FROM test_files WHERE test_id = @test_id AND name = @name;

-- TestFileList lists a test's files without their content.
-- name: TestFileList :many
SELECT test_id, name, sha256, length(content)::bigint AS size, updated_at
FROM test_files WHERE test_id = $1 ORDER BY name;

-- TestFileContents reads the named files of a test with their content, to ship or to copy into
-- a script.
-- name: TestFileContents :many
SELECT * FROM test_files WHERE test_id = @test_id AND name = ANY(@names::text[]) ORDER BY name;

-- name: TestFileCount :one
SELECT count(*) FROM test_files WHERE test_id = $1;


-- TestLastRuns reads the newest run of each of the tests given, in the projects given, of any script generated
-- from it, with the brief of its summary (its total without the histogram, thresholds, verdict
-- and what is incomplete) when it has one; a test without runs has no row.
-- name: TestLastRuns :many
SELECT t.id::uuid AS test_id, r.id, r.state, r.created_at, r.ended_at,
       CASE WHEN r.summary IS NOT NULL THEN jsonb_build_object(
           'total', (r.summary->'total') - 'histogram', 'thresholds', r.summary->'thresholds',
           'verdict', r.summary->'verdict', 'incomplete', r.summary->'incomplete',
           'baseline', jsonb_build_object('verdict', r.summary->'baseline'->'verdict')) END::jsonb AS outcome
FROM unnest(@test_ids::uuid[]) AS t(id)
CROSS JOIN LATERAL (
    SELECT runs.id, runs.state, runs.created_at, runs.ended_at, runs.summary
    FROM runs JOIN scripts ON scripts.id = runs.script_id
    WHERE runs.project_id = ANY(@projects::uuid[]) AND scripts.project_id = runs.project_id AND scripts.manifest->>'test_id' = t.id::text
    ORDER BY runs.id DESC
    LIMIT 1
) r;

-- TestSetBaseline sets (or, with a NULL run, clears) the baseline of a test of the projects given.
-- name: TestSetBaseline :one
UPDATE tests SET baseline_run_id = sqlc.narg(run_id)::uuid, baseline_tolerances = sqlc.narg(tolerances)::jsonb
WHERE id = @id AND project_id = ANY(@projects::uuid[])
RETURNING *;

-- TestBaselineOf reads the baseline of a test by id alone, for the work of the control plane: the
-- summary of a run of the test that ended.
-- name: TestBaselineOf :one
SELECT baseline_run_id, baseline_tolerances FROM tests WHERE id = @id;

-- TestTrend reads the newest ended runs of a test, newest first, with the figures of their
-- summaries a trend draws (the histograms left out).
-- name: TestTrend :many
SELECT runs.id, runs.state, runs.created_at, runs.ended_at, COALESCE((runs.manifest->>'test_revision')::int, 0)::int AS revision,
       jsonb_build_object(
           'total', (runs.summary->'total') - 'histogram',
           'requests', COALESCE((SELECT jsonb_agg(e.label - 'histogram') FROM jsonb_array_elements(runs.summary->'requests') AS e(label)), '[]'::jsonb),
           'thresholds', runs.summary->'thresholds',
           'baseline', runs.summary->'baseline'->'run_id',
           'verdict', runs.summary->'baseline'->'verdict')::jsonb AS figures
FROM runs JOIN scripts ON scripts.id = runs.script_id
WHERE runs.project_id = ANY(@projects::uuid[]) AND scripts.project_id = runs.project_id
  AND scripts.manifest->>'test_id' = sqlc.arg(test_id)::uuid::text AND runs.summary IS NOT NULL
ORDER BY runs.id DESC
LIMIT @max_rows;
