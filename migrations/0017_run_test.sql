-- The portal (issue 26): a run's manifest names the test and revision its script was generated
-- from (test_id, test_revision), so that a run's page links to its test. Runs made before say it
-- too, from their scripts.
UPDATE runs SET manifest = runs.manifest || jsonb_strip_nulls(jsonb_build_object(
    'test_id', scripts.manifest->'test_id', 'test_revision', scripts.manifest->'test_revision'))
FROM scripts
WHERE scripts.id = runs.script_id AND scripts.manifest ? 'test_id';
