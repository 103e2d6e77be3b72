-- Who signed up with which invitation, so that an admin sees each invitation's uses: the
-- account a sign-up made records the invitation it redeemed. Users who signed up before this
-- migration keep NULL, as nothing recorded their invitation; an invitation's removal leaves its
-- accounts, unlinked.
ALTER TABLE users ADD COLUMN invitation_id uuid REFERENCES invitations (id) ON DELETE SET NULL;

-- The uses of a page of invitations are read together, by invitation.
CREATE INDEX users_invitation_idx ON users (invitation_id) WHERE invitation_id IS NOT NULL;
