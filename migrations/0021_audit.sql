-- The audit log (issue 29): who did what to which object, from which address, when, and with
-- what outcome, for security and admin events. Append-only: no route changes or deletes an
-- entry; the hourly clean-up deletes those past the retention (audit_retention, 400 days by
-- default), and the trigger below refuses every other change, whoever connects.
CREATE TABLE audit_events (
    -- A UUIDv7: its order is the events' order, and the list's cursor.
    id          uuid PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT now(),
    -- Who acted: a user (actor_id, with the email they had then), an agent, or nobody signed in
    -- (a failed sign-in names the email it tried). No foreign key: an entry outlives its actor.
    actor_kind  text NOT NULL CHECK (actor_kind IN ('user', 'agent', 'anonymous')),
    actor_id    uuid,
    actor_email text NOT NULL DEFAULT '',
    -- The personal API token the request carried, if it carried one.
    token_id    uuid,
    action      text NOT NULL CHECK (action ~ '^[a-z_]+\.[a-z_]+$'),
    object_kind text NOT NULL,
    object_id   text NOT NULL DEFAULT '',
    -- The user the event concerns, when it is not the actor (a sign-in tried on an account, a
    -- user an admin disabled): they read it in their own log.
    subject_id  uuid,
    -- The project the object is in, when it is in one: its owners read the entry.
    project_id  uuid,
    address     text NOT NULL DEFAULT '',
    outcome     text NOT NULL CHECK (outcome IN ('success', 'failure')),
    -- The API's answer: its status, and for a failure the reason it gave.
    status      integer NOT NULL,
    reason      text NOT NULL DEFAULT '',
    request_id  text NOT NULL DEFAULT '',
    -- What else the event says (the fields a change set; never a secret's value).
    detail      jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(detail) = 'object')
);

CREATE INDEX audit_events_at_idx ON audit_events (at);
CREATE INDEX audit_events_actor_idx ON audit_events (actor_id, id) WHERE actor_id IS NOT NULL;
CREATE INDEX audit_events_subject_idx ON audit_events (subject_id, id) WHERE subject_id IS NOT NULL;
CREATE INDEX audit_events_project_idx ON audit_events (project_id, id) WHERE project_id IS NOT NULL;
CREATE INDEX audit_events_action_idx ON audit_events (action, id);

-- Entries are never changed, and deleted only by the clean-up, which says in its transaction
-- how old an entry must be (SET LOCAL barrage.audit_retention): anything else is refused.
CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    keep interval := nullif(current_setting('barrage.audit_retention', true), '')::interval;
BEGIN
    IF TG_OP = 'DELETE' AND keep IS NOT NULL THEN
        IF OLD.at < now() - keep THEN
            RETURN OLD;
        END IF;
    END IF;
    RAISE EXCEPTION 'audit_events is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$;

CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON audit_events
    FOR EACH ROW EXECUTE FUNCTION audit_events_append_only();

CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
    FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only();
