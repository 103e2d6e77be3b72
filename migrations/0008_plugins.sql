-- The marketplace's plugins and their versions (issue 12). A version is immutable: its
-- artifacts (one per platform, kept by SHA-256 in the blob store), the SHA256SUMS they make and
-- its signature by one of the namespace's keys. Only its state moves: pending until an admin
-- approves (published) or rejects it; then deprecated (still usable, warned about) or revoked
-- (no new run may use it).
CREATE TABLE plugins (
    namespace   text NOT NULL REFERENCES namespaces (name) ON DELETE CASCADE,
    name        text NOT NULL CHECK (name ~ '^[a-z][a-z0-9-]{0,63}$'),
    -- listed: a version is published or deprecated, so everyone signed in may find the plugin.
    -- The fields below are those of its latest listed version, or, unlisted, of its latest.
    listed      boolean NOT NULL DEFAULT false,
    latest      text NOT NULL,
    kinds       text[] NOT NULL,
    description text NOT NULL,
    license     text NOT NULL,
    source_url  text NOT NULL,
    tags        text[] NOT NULL,
    -- search_text: the words a search finds the plugin by (its names, description and tags).
    search_text text NOT NULL,
    downloads   bigint NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace, name)
);

CREATE INDEX plugins_search_idx ON plugins USING gin (to_tsvector('simple', search_text));

CREATE TABLE plugin_versions (
    namespace     text NOT NULL,
    name          text NOT NULL,
    version       text NOT NULL,
    -- The version without its build metadata: SemVer gives 1.0.0+a and 1.0.0+b one precedence,
    -- so they are one version, published once.
    version_core  text NOT NULL,
    state         text NOT NULL DEFAULT 'pending'
                  CHECK (state IN ('pending', 'published', 'rejected', 'deprecated', 'revoked')),
    state_reason  text NOT NULL DEFAULT '',
    kinds         text[] NOT NULL,
    description   text NOT NULL,
    readme        text NOT NULL,
    license       text NOT NULL,
    source_url    text NOT NULL,
    tags          text[] NOT NULL,
    protocols     integer[] NOT NULL,
    config_schema text NOT NULL,
    network       text[] NOT NULL,
    sums          bytea NOT NULL,
    signature     bytea NOT NULL,
    signer        text NOT NULL,
    published_by  uuid REFERENCES users (id) ON DELETE SET NULL,
    reviewed_by   uuid REFERENCES users (id) ON DELETE SET NULL,
    reviewed_at   timestamptz,
    downloads     bigint NOT NULL DEFAULT 0,
    runs          bigint NOT NULL DEFAULT 0,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace, name, version),
    UNIQUE (namespace, name, version_core),
    FOREIGN KEY (namespace, name) REFERENCES plugins (namespace, name) ON DELETE CASCADE,
    FOREIGN KEY (namespace, signer) REFERENCES signing_keys (namespace, id)
);

CREATE INDEX plugin_versions_pending_idx ON plugin_versions (created_at) WHERE state = 'pending';

CREATE TABLE plugin_artifacts (
    namespace text NOT NULL,
    name      text NOT NULL,
    version   text NOT NULL,
    os        text NOT NULL,
    arch      text NOT NULL,
    file      text NOT NULL,
    format    text NOT NULL CHECK (format IN ('elf', 'zipapp')),
    sha256    text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    size      bigint NOT NULL CHECK (size > 0),
    PRIMARY KEY (namespace, name, version, os, arch),
    FOREIGN KEY (namespace, name, version) REFERENCES plugin_versions (namespace, name, version) ON DELETE CASCADE
);
