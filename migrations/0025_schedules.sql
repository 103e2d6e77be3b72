-- Schedules (issue 30): a test run by the clock, by a cron expression in a time zone or every so
-- long, as whoever made the schedule (their license counts it). Each firing is recorded once,
-- whichever replica fires it (its key is the schedule and the instant it was due), with the run
-- it started or why it could not start one.
CREATE TABLE schedules (
    id            uuid PRIMARY KEY,
    project_id    uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    test_id       uuid NOT NULL REFERENCES tests (id) ON DELETE CASCADE,
    owner_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name          text NOT NULL,
    -- cron is a cron expression (five fields, or @daily and the like) read in time_zone, or
    -- "@every <duration>".
    cron          text NOT NULL,
    time_zone     text NOT NULL,
    -- revision is the test's revision each firing runs; 0 runs its latest.
    revision      int NOT NULL DEFAULT 0,
    -- what each run asks for: agents by id, or how many; load overrides; the script's values.
    agent_ids     uuid[] NOT NULL DEFAULT '{}',
    agents        int NOT NULL DEFAULT 0,
    load          jsonb NOT NULL DEFAULT '{}',
    env           jsonb NOT NULL DEFAULT '{}',
    next_at       timestamptz NOT NULL,
    paused_at     timestamptz,
    paused_reason text NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX schedules_due_idx ON schedules (next_at) WHERE paused_at IS NULL;
CREATE INDEX schedules_project_idx ON schedules (project_id, id);

CREATE TABLE schedule_firings (
    schedule_id uuid NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    due_at      timestamptz NOT NULL,
    run_id      uuid REFERENCES runs (id) ON DELETE SET NULL,
    -- error says why the firing started no run (a license expired, agents busy, a limit).
    error       text NOT NULL DEFAULT '',
    fired_at    timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (schedule_id, due_at)
);
