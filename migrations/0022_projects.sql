-- Projects (issue 29): what a team shares. A project holds tests, scripts, runs, private agents,
-- targets and secrets; its members hold a role. Every user has a personal project, made with
-- the account, into which this migration moves everything each user had: nothing is lost, and
-- each row stays reachable by its owner. owner_id stays on every row as the user who made it
-- (a run's: who started it, whose license it counts against; a test's: whose quota it spends).
CREATE TABLE projects (
    id          uuid PRIMARY KEY,
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    -- The user whose personal project this is (NULL: a project made to share). A personal
    -- project is never deleted while its user is there.
    personal_of uuid UNIQUE REFERENCES users (id) ON DELETE CASCADE,
    created_by  uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE project_members (
    project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    -- owner: members, settings, delete; editor: tests, scripts, runs, agents, targets, secrets;
    -- runner: start and cancel runs of what exists, read everything; viewer: read.
    role       text NOT NULL CHECK (role IN ('owner', 'editor', 'runner', 'viewer')),
    added_by   uuid REFERENCES users (id) ON DELETE SET NULL,
    added_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, user_id)
);

CREATE INDEX project_members_user_idx ON project_members (user_id);

-- An invitation to a project, to an existing user, who accepts or declines it.
CREATE TABLE project_invitations (
    id         uuid PRIMARY KEY,
    project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role       text NOT NULL CHECK (role IN ('owner', 'editor', 'runner', 'viewer')),
    invited_by uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (project_id, user_id)
);

CREATE INDEX project_invitations_user_idx ON project_invitations (user_id);

-- Every account has its personal project from its first moment, whichever code made it.
CREATE FUNCTION users_personal_project() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    pid uuid := gen_random_uuid();
BEGIN
    INSERT INTO projects (id, name, personal_of, created_by) VALUES (pid, 'Personal', NEW.id, NEW.id);
    INSERT INTO project_members (project_id, user_id, role, added_by) VALUES (pid, NEW.id, 'owner', NEW.id);
    RETURN NEW;
END;
$$;

INSERT INTO projects (id, name, personal_of, created_by, created_at)
SELECT gen_random_uuid(), 'Personal', u.id, u.id, u.created_at FROM users u;
INSERT INTO project_members (project_id, user_id, role, added_by, added_at)
SELECT p.id, p.personal_of, 'owner', p.personal_of, p.created_at FROM projects p;

CREATE TRIGGER users_personal_project AFTER INSERT ON users
    FOR EACH ROW EXECUTE FUNCTION users_personal_project();

-- What each user had moves into their personal project.
ALTER TABLE tests ADD COLUMN project_id uuid REFERENCES projects (id) ON DELETE CASCADE;
UPDATE tests t SET project_id = p.id FROM projects p WHERE p.personal_of = t.owner_id;
ALTER TABLE tests ALTER COLUMN project_id SET NOT NULL;
CREATE INDEX tests_project_idx ON tests (project_id, id);

ALTER TABLE scripts ADD COLUMN project_id uuid REFERENCES projects (id) ON DELETE CASCADE;
UPDATE scripts s SET project_id = p.id FROM projects p WHERE p.personal_of = s.owner_id;
ALTER TABLE scripts ALTER COLUMN project_id SET NOT NULL;
CREATE INDEX scripts_project_idx ON scripts (project_id, id);

ALTER TABLE runs ADD COLUMN project_id uuid REFERENCES projects (id) ON DELETE CASCADE;
UPDATE runs r SET project_id = p.id FROM projects p WHERE p.personal_of = r.owner_id;
ALTER TABLE runs ALTER COLUMN project_id SET NOT NULL;
CREATE INDEX runs_project_idx ON runs (project_id, id);

ALTER TABLE targets ADD COLUMN project_id uuid REFERENCES projects (id) ON DELETE CASCADE;
UPDATE targets t SET project_id = p.id FROM projects p WHERE p.personal_of = t.owner_id;
ALTER TABLE targets ALTER COLUMN project_id SET NOT NULL;
ALTER TABLE targets DROP CONSTRAINT targets_owner_id_host_port_key;
ALTER TABLE targets ADD CONSTRAINT targets_project_host_port_key UNIQUE (project_id, host, port);
CREATE INDEX targets_project_idx ON targets (project_id, id);

ALTER TABLE secrets ADD COLUMN project_id uuid REFERENCES projects (id) ON DELETE CASCADE;
UPDATE secrets s SET project_id = p.id FROM projects p WHERE p.personal_of = s.owner_id;
ALTER TABLE secrets ALTER COLUMN project_id SET NOT NULL;
ALTER TABLE secrets DROP CONSTRAINT secrets_pkey;
ALTER TABLE secrets ADD PRIMARY KEY (project_id, name);

-- A private agent serves its project's runs; a shared one (owner_id NULL) everyone's.
ALTER TABLE agents ADD COLUMN project_id uuid REFERENCES projects (id) ON DELETE CASCADE;
UPDATE agents a SET project_id = p.id FROM projects p WHERE p.personal_of = a.owner_id;
ALTER TABLE agents ADD CONSTRAINT agents_private_in_project CHECK ((owner_id IS NULL) = (project_id IS NULL));
CREATE INDEX agents_project_idx ON agents (project_id) WHERE project_id IS NOT NULL;

-- A personal API token may be limited to one project (NULL: every project of its user).
ALTER TABLE api_tokens ADD COLUMN project_id uuid REFERENCES projects (id) ON DELETE CASCADE;
