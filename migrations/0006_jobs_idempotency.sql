-- An agent's jobs outlive their test: a job under way on an agent still holds one of the agent's
-- job slots (and one of its owner's open jobs) after its test is deleted, so deleting a test
-- cannot free a slot the agent is still busy with. A job whose test is gone is answered with
-- that reason instead of being handed out.
ALTER TABLE agent_jobs
    ALTER COLUMN test_id DROP NOT NULL,
    DROP CONSTRAINT agent_jobs_test_id_fkey,
    ADD CONSTRAINT agent_jobs_test_id_fkey FOREIGN KEY (test_id) REFERENCES tests (id) ON DELETE SET NULL;

-- The jobs an agent has been handed and not answered: its busy slots.
CREATE INDEX agent_jobs_busy_idx ON agent_jobs (agent_id) WHERE delivered_at IS NOT NULL AND answered_at IS NULL;

-- A run created with an idempotency key keeps the digest of the request that created it, so
-- that the key reused for a different request is refused rather than answered with a run the
-- request did not ask for.
ALTER TABLE runs ADD COLUMN request_sha256 bytea;
