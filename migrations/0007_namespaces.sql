-- The marketplace's namespaces (issue 12): a user claims one, first come, and owns it with the
-- co-owners added; admins may reserve a name, which only they then hold. A namespace's Ed25519
-- keys sign its versions; a retired key signs nothing new and still verifies what it signed.
CREATE TABLE namespaces (
    name       text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9-]{0,63}$'),
    reserved   boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE namespace_owners (
    namespace text NOT NULL REFERENCES namespaces (name) ON DELETE CASCADE,
    user_id   uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    added_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace, user_id)
);

CREATE INDEX namespace_owners_user_idx ON namespace_owners (user_id);

CREATE TABLE signing_keys (
    namespace  text NOT NULL REFERENCES namespaces (name) ON DELETE CASCADE,
    -- The key's id: the first 16 hex digits of the SHA-256 of public_key.
    id         text NOT NULL,
    public_key bytea NOT NULL CHECK (length(public_key) = 32),
    added_by   uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    retired_at timestamptz,
    PRIMARY KEY (namespace, id)
);
