-- Targets whose control their owners proved (issue 14): shared agents load only these. The
-- token is the target's own (another account registering the same host gets another), served
-- at /barrage-verify-<token>.txt. verified_at is NULL until a check proves control and again
-- after a check that fails (check_error says why); address is the one that served the proof,
-- which shared agents load alone for the host ('' while not verified).
CREATE TABLE targets (
    id          uuid PRIMARY KEY,
    owner_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    scheme      text NOT NULL CHECK (scheme IN ('http', 'https')),
    host        text NOT NULL CHECK (host <> '' AND length(host) <= 253),
    port        integer NOT NULL CHECK (port BETWEEN 1 AND 65535),
    token       text NOT NULL UNIQUE,
    verified_at timestamptz,
    checked_at  timestamptz,
    check_error text NOT NULL DEFAULT '',
    address     text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (owner_id, host, port)
);

CREATE INDEX targets_owner_idx ON targets (owner_id, id);

-- The hosts and ports ("host:port", or "host:port@address" for one pinned to the address that
-- proved control) a run's shards may load, when it runs on a shared agent: the operator's open
-- targets and those of its owner's that were verified at its start. NULL: no such bound
-- (private agents follow their operator's allow-list alone).
ALTER TABLE runs ADD COLUMN destinations text[];

-- The protocol an agent spoke when it last asked for work: work that needs a newer one (a job
-- bounded to destinations) is not handed to it.
ALTER TABLE agents ADD COLUMN protocol integer NOT NULL DEFAULT 0;

-- What a run aims at the addresses that proved control of its targets, for the cap on the
-- combined load of every user's runs at one address: its VUs as admitted, and those addresses.
ALTER TABLE runs ADD COLUMN vus integer NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN dest_addresses text[];
CREATE INDEX runs_dest_addresses_idx ON runs USING gin (dest_addresses)
    WHERE state IN ('created', 'queued', 'starting', 'running');
