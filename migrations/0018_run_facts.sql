-- What a run's script and load overrides make of it (issue 27): its workload, labels, checks,
-- scenarios, thresholds and monitor series, derived once when the server creates the run, so
-- that its live view, judgement, summary, comparison and sweep parse no script. Runs made before
-- have none here: the first that needs them derives them from the script and stores them.
CREATE TABLE run_facts (
    run_id uuid PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    facts  jsonb NOT NULL
);
