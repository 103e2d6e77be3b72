-- Fair share (issue 25), what quotas need.
--
-- A license may set its own quotas over the server's defaults: storage_bytes, tests, namespaces,
-- pending_versions, targets (whole numbers above 0; a quota not named is the server's default).
-- Invitations carry them to the licenses they issue.
ALTER TABLE users ADD COLUMN license_quotas jsonb NOT NULL DEFAULT '{}'
    CHECK (jsonb_typeof(license_quotas) = 'object');
ALTER TABLE invitations ADD COLUMN license_quotas jsonb NOT NULL DEFAULT '{}'
    CHECK (jsonb_typeof(license_quotas) = 'object');

-- A namespace counts against the quota of the user who claimed it, not of every owner: a
-- co-owner added by someone else did not spend their own quota. Existing ones were claimed by
-- their first owner.
ALTER TABLE namespaces ADD COLUMN claimed_by uuid REFERENCES users (id) ON DELETE SET NULL;
UPDATE namespaces n SET claimed_by = (
    SELECT o.user_id FROM namespace_owners o WHERE o.namespace = n.name ORDER BY o.added_at, o.user_id LIMIT 1
) WHERE NOT n.reserved;
CREATE INDEX namespaces_claimed_by_idx ON namespaces (claimed_by);

-- A script's data files are kept once per owner, by content: each run of a test makes a script
-- with the test's files, and a copy each time filled the database (40 generations of a test with
-- 16 MiB of files: 160 MB).
CREATE TABLE file_contents (
    owner_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    sha256   bytea NOT NULL CHECK (length(sha256) = 32),
    content  bytea NOT NULL,
    PRIMARY KEY (owner_id, sha256)
);
INSERT INTO file_contents (owner_id, sha256, content)
SELECT DISTINCT ON (s.owner_id, f.sha256) s.owner_id, f.sha256, f.content
FROM script_files f JOIN scripts s ON s.id = f.script_id
ORDER BY s.owner_id, f.sha256;
ALTER TABLE script_files DROP COLUMN content;

-- Guesses per account: the addresses (an IPv4 address, an IPv6 /64) each account signed in from
-- lately, which keep signing in at full speed while strangers guessing its password from many
-- addresses are slowed; and when such guessing was last seen, for the owner and admins to read.
CREATE TABLE sign_in_addresses (
    user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    client  text NOT NULL,
    last_at timestamptz NOT NULL,
    PRIMARY KEY (user_id, client)
);
ALTER TABLE users ADD COLUMN guessed_at timestamptz;
