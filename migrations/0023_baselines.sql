-- Baselines and trends (issue 30): a test's baseline is one of its finished runs, with the
-- tolerances its later runs are held to (NULL: the defaults). Every run of the test that ends
-- after it is compared with it, and the comparison is kept in the run's summary.
ALTER TABLE tests
    ADD COLUMN baseline_run_id uuid REFERENCES runs (id) ON DELETE SET NULL,
    ADD COLUMN baseline_tolerances jsonb;
