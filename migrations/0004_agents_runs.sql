-- Measuring agents, and the runs placed on them: shards leased with a fencing token, and the
-- seconds of metrics each shard reports.

CREATE TABLE agents (
    id              uuid PRIMARY KEY,
    name            text NOT NULL,
    -- NULL: a shared (platform) agent that every user may run on; else the user's own.
    owner_id        uuid REFERENCES users (id) ON DELETE CASCADE,
    token_hash      bytea NOT NULL UNIQUE,
    -- The agent's own limits per job; NULL: none.
    max_vus         integer CHECK (max_vus > 0),
    max_run_seconds integer CHECK (max_run_seconds > 0),
    -- What the agent said of itself when it last asked for work.
    version         text NOT NULL DEFAULT '',
    cores           integer NOT NULL DEFAULT 0,
    last_seen_at    timestamptz,
    last_ip         text NOT NULL DEFAULT '',
    disabled        boolean NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL DEFAULT now(),
    CHECK (length(name) BETWEEN 1 AND 100)
);

CREATE INDEX agents_owner_idx ON agents (owner_id);

-- An application-level ping through an agent: the agent takes it with its work and answers it.
CREATE TABLE agent_pings (
    id           uuid PRIMARY KEY,
    agent_id     uuid NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    delivered_at timestamptz,
    answered_at  timestamptz
);

CREATE INDEX agent_pings_waiting_idx ON agent_pings (agent_id) WHERE delivered_at IS NULL;

-- An immutable script: the form of a test that agents execute, with the data files it reads.
CREATE TABLE scripts (
    id          uuid PRIMARY KEY,
    owner_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name        text NOT NULL,
    source      bytea NOT NULL,
    sha256      bytea NOT NULL,
    -- Where it came from (test and revision) and what went into it (plugins and their digests).
    manifest    jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX scripts_owner_idx ON scripts (owner_id, id);

CREATE TABLE script_files (
    script_id   uuid NOT NULL REFERENCES scripts (id) ON DELETE CASCADE,
    name        text NOT NULL,
    content     bytea NOT NULL,
    sha256      bytea NOT NULL,
    PRIMARY KEY (script_id, name)
);

CREATE TABLE runs (
    id              uuid PRIMARY KEY,
    owner_id        uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    script_id       uuid NOT NULL REFERENCES scripts (id),
    -- What the run executes, pinned when it is created: the script's digest, its plugins and
    -- data files with theirs (the agents and their versions are on the shards).
    manifest        jsonb NOT NULL,
    state           text NOT NULL CHECK (state IN ('created', 'queued', 'starting', 'running', 'finished',
                        'failed', 'canceled', 'timed_out', 'aborted_limit', 'aborted_threshold')),
    reason          text NOT NULL DEFAULT '',
    -- The load as run: the script's, with the overrides asked for (vus, duration, rate).
    load            jsonb NOT NULL,
    -- The effective limits: the tightest of the license's and every chosen agent's.
    max_vus         integer,
    max_run_seconds integer,
    idempotency_key text,
    -- The instant every shard's schedule starts, set when the first shard is leased.
    start_at        timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    ended_at        timestamptz,
    -- Set when the run is stopped before its end, by a cancel (canceled) or an aborting threshold
    -- on the merged seconds (aborted_threshold); the agents learn it at their next report.
    stop_state      text CHECK (stop_state IN ('canceled', 'aborted_threshold')),
    stop_reason     text,
    -- The summary, computed once every shard has ended.
    summary         jsonb,
    UNIQUE (owner_id, idempotency_key)
);

CREATE INDEX runs_owner_idx ON runs (owner_id, id);
CREATE INDEX runs_active_idx ON runs (state) WHERE state IN ('created', 'queued', 'starting', 'running');

CREATE TABLE shards (
    id            uuid PRIMARY KEY,
    run_id        uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    -- NULL once the agent was removed: the shard's results stay with the run.
    agent_id      uuid REFERENCES agents (id) ON DELETE SET NULL,
    -- The engine segment the shard runs: from:to/of.
    seg_from      integer NOT NULL,
    seg_to        integer NOT NULL,
    seg_of        integer NOT NULL,
    state         text NOT NULL CHECK (state IN ('pending', 'running', 'finished', 'failed', 'canceled',
                      'timed_out', 'aborted_limit', 'aborted_threshold', 'lost')),
    reason        text NOT NULL DEFAULT '',
    -- The fencing token: each lease increments it, and a report that does not carry the current
    -- one comes from a stale holder and is refused.
    lease         bigint NOT NULL DEFAULT 0,
    agent_version text NOT NULL DEFAULT '',
    leased_at     timestamptz,
    heartbeat_at  timestamptz,
    ended_at      timestamptz,
    late_start_ms bigint NOT NULL DEFAULT 0,
    -- The shard's own figures, sent when it ends.
    result        jsonb,
    CHECK (0 <= seg_from AND seg_from < seg_to AND seg_to <= seg_of)
);

CREATE INDEX shards_run_idx ON shards (run_id);
CREATE INDEX shards_pending_idx ON shards (agent_id) WHERE state = 'pending';
CREATE INDEX shards_running_idx ON shards (heartbeat_at) WHERE state = 'running';

-- One second of one shard: the metrics snapshot in its binary encoding and the generator's
-- health. A second sent twice is stored once.
CREATE TABLE shard_seconds (
    shard_id  uuid NOT NULL REFERENCES shards (id) ON DELETE CASCADE,
    idx       bigint NOT NULL CHECK (idx >= 0),
    snapshot  bytea NOT NULL,
    health    jsonb NOT NULL,
    PRIMARY KEY (shard_id, idx)
);
