-- Tests: the sessions testers edit, kept as revisions, with the data files they read; and the
-- jobs an agent does for them (a traced iteration, the generation of a script), since the server
-- never executes plugin code.

CREATE TABLE tests (
    id              uuid PRIMARY KEY,
    owner_id        uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name            text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    latest_revision integer NOT NULL CHECK (latest_revision > 0),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX tests_owner_idx ON tests (owner_id, id);

-- Every save of a test is a revision; old ones stay readable.
CREATE TABLE test_revisions (
    test_id    uuid NOT NULL REFERENCES tests (id) ON DELETE CASCADE,
    revision   integer NOT NULL CHECK (revision > 0),
    -- The session in the script format, as it was sent: JSON or YAML.
    format     text NOT NULL CHECK (format IN ('json', 'yaml')),
    source     bytea NOT NULL,
    sha256     bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (test_id, revision)
);

-- A test's data files (CSV), by the name its data variables give; replaced whole by a new upload.
-- Generating a script copies them into the script, which is immutable.
CREATE TABLE test_files (
    test_id    uuid NOT NULL REFERENCES tests (id) ON DELETE CASCADE,
    name       text NOT NULL,
    content    bytea NOT NULL,
    sha256     bytea NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (test_id, name)
);

-- Work an agent does for a user beside shards: one traced iteration of a test (debug), or the
-- generation of a test's script (source plugins run, plugins pinned by digest). The asker waits
-- for the answer; an agent takes a job with its work or its next report.
CREATE TABLE agent_jobs (
    id           uuid PRIMARY KEY,
    agent_id     uuid NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    owner_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind         text NOT NULL CHECK (kind IN ('debug', 'generate')),
    test_id      uuid NOT NULL REFERENCES tests (id) ON DELETE CASCADE,
    revision     integer NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    delivered_at timestamptz,
    answered_at  timestamptz,
    -- The agent's answer: the job's result as JSON, or why it failed.
    result       jsonb,
    error        text
);

CREATE INDEX agent_jobs_waiting_idx ON agent_jobs (agent_id) WHERE delivered_at IS NULL;
