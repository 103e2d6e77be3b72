-- Users' secrets (issue 24): a value sealed with AES-256-GCM under the server's keyring (the
-- key's id at its head; bound to its owner and name), never stored or returned in the clear.
-- Scripts read one as ${secret.NAME}; an agent is handed the values its shard or job needs.
CREATE TABLE secrets (
    owner_id   uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name       text NOT NULL CHECK (name ~ '^[A-Za-z_][A-Za-z0-9_]{0,63}$'),
    sealed     bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner_id, name)
);
