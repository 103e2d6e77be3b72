-- Notifications (issue 30): a project's channels (a signed webhook, a Slack-compatible incoming
-- webhook, or email), the events each wants, and a log of every delivery with its attempts. A
-- channel's URL and signing secret are sealed (a Slack webhook's URL is its secret); what lists
-- show of a URL is its host alone.
CREATE TABLE notification_channels (
    id            uuid PRIMARY KEY,
    project_id    uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    created_by    uuid REFERENCES users (id) ON DELETE SET NULL,
    name          text NOT NULL,
    kind          text NOT NULL CHECK (kind IN ('webhook', 'slack', 'email')),
    -- target is where deliveries go: the URL (sealed) of a webhook or Slack channel, the
    -- address of an email one (sealed too, for one shape of row).
    target_sealed bytea NOT NULL,
    -- target_hint is what lists show of the target: a URL's scheme and host, an address.
    target_hint   text NOT NULL,
    -- secret_sealed signs a webhook's deliveries (HMAC-SHA256); NULL for other kinds.
    secret_sealed bytea,
    events        text[] NOT NULL,
    -- failures counts the deliveries in a row that failed every attempt; at the pause limit
    -- the channel is paused, and says why, until someone resumes it.
    failures      int NOT NULL DEFAULT 0,
    paused_at     timestamptz,
    paused_reason text NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (project_id, name)
);

CREATE TABLE notification_deliveries (
    id           uuid PRIMARY KEY,
    channel_id   uuid NOT NULL REFERENCES notification_channels (id) ON DELETE CASCADE,
    event        text NOT NULL,
    -- payload is the event as delivered, byte for byte (the webhook's body, which its signature covers).
    payload      json NOT NULL,
    state        text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed', 'skipped')),
    attempts     int NOT NULL DEFAULT 0,
    last_status  int,
    last_error   text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    attempted_at timestamptz,
    done_at      timestamptz
);
CREATE INDEX notification_deliveries_channel_idx ON notification_deliveries (channel_id, id DESC);

-- An agent of a project that went offline (silent past barrage.AgentOnlineWithin) is told once
-- per time it goes: offline_told_at is when it last was; the agents offline now were told.
ALTER TABLE agents ADD COLUMN offline_told_at timestamptz;
UPDATE agents SET offline_told_at = now();
