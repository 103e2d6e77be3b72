package postgres

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/postgres/dbsqlc"
)

// bootstrapLockKey serialises the first-admin check between replicas starting together.
const bootstrapLockKey int64 = 0x4a1f3c2d5e6b7a81

// CreateInvitation stores inv with the hash of its code.
func (s *Store) CreateInvitation(ctx context.Context, inv barrage.Invitation, codeHash []byte) (barrage.Invitation, error) {
	row, err := s.q.InvitationInsert(ctx, s.pool, invitationParams(inv, codeHash))
	if err != nil {
		return barrage.Invitation{}, translate(err, "invitation")
	}
	return invitationFromRow(row), nil
}

// ListInvitations returns up to limit invitations older than the one with id before, newest
// first, each with the accounts made with it. The page and its uses are read from one snapshot,
// so that an invitation's uses left and the accounts it lists agree.
func (s *Store) ListInvitations(ctx context.Context, before *uuid.UUID, limit int) ([]barrage.Invitation, error) {
	var invs []barrage.Invitation
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := s.q.InvitationList(ctx, tx, dbsqlc.InvitationListParams{Before: before, MaxRows: int32(limit)})
		if err != nil {
			return translate(err, "invitations")
		}
		invs = make([]barrage.Invitation, len(rows))
		ids := make([]uuid.UUID, len(rows))
		byID := make(map[uuid.UUID]*barrage.Invitation, len(rows))
		for i, r := range rows {
			invs[i] = invitationFromRow(r)
			ids[i] = r.ID
			byID[r.ID] = &invs[i]
		}
		uses, err := s.q.InvitationUses(ctx, tx, ids)
		if err != nil {
			return translate(err, "invitation uses")
		}
		for _, u := range uses {
			inv := byID[u.InvitationID]
			inv.UsedBy = append(inv.UsedBy, barrage.InvitationUse{UserID: u.ID, Email: u.Email, Name: u.Name, At: u.CreatedAt})
		}
		return nil
	})
	return invs, err
}

// RevokeInvitation revokes the invitation with id; revoking twice is not an error.
func (s *Store) RevokeInvitation(ctx context.Context, id uuid.UUID) (barrage.Invitation, error) {
	row, err := s.q.InvitationRevoke(ctx, s.pool, id)
	if err != nil {
		return barrage.Invitation{}, translate(err, "invitation")
	}
	return invitationFromRow(row), nil
}

// EnsureFirstAdminInvitation stores the invitation that newInvitation makes when the database
// has no user and no redeemable admin invitation, and reports whether it did. Replicas starting
// together create at most one.
func (s *Store) EnsureFirstAdminInvitation(ctx context.Context, newInvitation func() (barrage.Invitation, []byte)) (bool, error) {
	created := false
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", bootstrapLockKey); err != nil {
			return err
		}
		users, err := s.q.UserCount(ctx, tx)
		if err != nil || users > 0 {
			return err
		}
		active, err := s.q.InvitationCountActiveAdmin(ctx, tx)
		if err != nil || active > 0 {
			return err
		}
		inv, hash := newInvitation()
		if _, err := s.q.InvitationInsert(ctx, tx, invitationParams(inv, hash)); err != nil {
			return err
		}
		created = true
		return nil
	})
	return created, err
}

func invitationParams(inv barrage.Invitation, codeHash []byte) dbsqlc.InvitationInsertParams {
	p := dbsqlc.InvitationInsertParams{
		ID: inv.ID, CodeHash: codeHash, Role: string(inv.Role), UsesTotal: int32(inv.UsesTotal),
		ExpiresAt: inv.ExpiresAt, Note: inv.Note, CreatedBy: inv.CreatedBy, LicenseQuotas: []byte("{}"),
	}
	if l := inv.License; l != nil {
		p.LicenseQuotas = quotasParam(l.Quotas)
		p.LicensePlan = &l.Plan
		p.LicenseMaxVus, p.LicenseMaxRunSeconds, p.LicenseMaxConcurrentRuns = limitsParams(l.Limits)
		p.LicenseValidDays = ptr(int32(l.ValidDays))
	}
	return p
}

func invitationFromRow(r dbsqlc.Invitation) barrage.Invitation {
	inv := barrage.Invitation{
		ID: r.ID, Role: barrage.Role(r.Role), UsesTotal: int(r.UsesTotal), UsesLeft: int(r.UsesLeft),
		ExpiresAt: r.ExpiresAt, Note: r.Note, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt, RevokedAt: r.RevokedAt,
	}
	if r.LicensePlan != nil {
		inv.License = &barrage.LicenseTemplate{
			Plan:      *r.LicensePlan,
			Limits:    limitsFromRow(r.LicenseMaxVus, r.LicenseMaxRunSeconds, r.LicenseMaxConcurrentRuns),
			Quotas:    quotasFromRow(r.LicenseQuotas),
			ValidDays: int(deref(r.LicenseValidDays)),
		}
	}
	return inv
}
