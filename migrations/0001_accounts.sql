-- Accounts, invitations, licenses, tokens and rate limits.

CREATE TABLE users (
    id                          uuid PRIMARY KEY,
    email                       text NOT NULL,
    name                        text NOT NULL,
    password_hash               text NOT NULL,
    role                        text NOT NULL CHECK (role IN ('admin', 'user')),
    disabled                    boolean NOT NULL DEFAULT false,
    -- The license is inlined: all four limits are set together, or none (no license: unlimited).
    license_plan                text,
    license_max_vus             integer CHECK (license_max_vus > 0),
    license_max_run_seconds     integer CHECK (license_max_run_seconds > 0),
    license_max_concurrent_runs integer CHECK (license_max_concurrent_runs > 0),
    license_valid_until         timestamptz,
    -- Access tokens issued before this instant are refused (password change, forced sign-out).
    tokens_valid_after          timestamptz NOT NULL DEFAULT '1970-01-01 00:00:00+00',
    created_at                  timestamptz NOT NULL DEFAULT now(),
    updated_at                  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT users_license_complete CHECK (
        (license_plan IS NULL) = (license_max_vus IS NULL)
        AND (license_plan IS NULL) = (license_max_run_seconds IS NULL)
        AND (license_plan IS NULL) = (license_max_concurrent_runs IS NULL)
        AND (license_plan IS NULL) = (license_valid_until IS NULL)
    )
);

CREATE UNIQUE INDEX users_email_key ON users (lower(email));

CREATE TABLE invitations (
    id                          uuid PRIMARY KEY,
    code_hash                   bytea NOT NULL UNIQUE,
    role                        text NOT NULL CHECK (role IN ('admin', 'user')),
    license_plan                text,
    license_max_vus             integer CHECK (license_max_vus > 0),
    license_max_run_seconds     integer CHECK (license_max_run_seconds > 0),
    license_max_concurrent_runs integer CHECK (license_max_concurrent_runs > 0),
    license_valid_days          integer CHECK (license_valid_days > 0),
    uses_total                  integer NOT NULL CHECK (uses_total > 0),
    uses_left                   integer NOT NULL CHECK (uses_left >= 0 AND uses_left <= uses_total),
    expires_at                  timestamptz NOT NULL,
    note                        text NOT NULL DEFAULT '',
    created_by                  uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at                  timestamptz NOT NULL DEFAULT now(),
    revoked_at                  timestamptz,
    CONSTRAINT invitations_license_complete CHECK (
        (license_plan IS NULL) = (license_max_vus IS NULL)
        AND (license_plan IS NULL) = (license_max_run_seconds IS NULL)
        AND (license_plan IS NULL) = (license_max_concurrent_runs IS NULL)
        AND (license_plan IS NULL) = (license_valid_days IS NULL)
    )
);

CREATE TABLE refresh_tokens (
    id          uuid PRIMARY KEY,
    user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    family_id   uuid NOT NULL,
    token_hash  bytea NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz,
    revoked_at  timestamptz
);

CREATE INDEX refresh_tokens_family_idx ON refresh_tokens (family_id);
CREATE INDEX refresh_tokens_user_idx ON refresh_tokens (user_id);

CREATE TABLE api_tokens (
    id           uuid PRIMARY KEY,
    user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         text NOT NULL,
    token_hash   bytea NOT NULL UNIQUE,
    scopes       text[] NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    last_used_at timestamptz,
    UNIQUE (user_id, name)
);

-- Fixed-window counters shared by every replica (login and sign-up throttling).
CREATE TABLE rate_limits (
    key          text NOT NULL,
    window_start timestamptz NOT NULL,
    hits         integer NOT NULL,
    PRIMARY KEY (key, window_start)
);
