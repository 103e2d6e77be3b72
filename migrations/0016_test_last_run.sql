-- The portal (issue 26): each test shows its last run, the newest run of any script generated
-- from it, found for a page of tests at once. Scripts name their test in their manifest; a
-- test's scripts are found by it, and each script's runs newest first (runs by script also serve
-- the list of a test's runs and the reference from runs to scripts).
CREATE INDEX scripts_test_idx ON scripts (owner_id, (manifest->>'test_id'));
CREATE INDEX runs_script_idx ON runs (script_id, id);
