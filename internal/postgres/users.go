package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/postgres/dbsqlc"
)

// CreateUserFromInvitation spends one use of the invitation whose code hashes to codeHash and
// creates u with the invitation's role and license, recording the invitation it was made with,
// in one transaction. When u's email is taken the use is spent all the same and the error is
// ErrEmailTaken; when the code cannot be redeemed, nothing is spent. u's role and license are
// ignored.
func (s *Store) CreateUserFromInvitation(ctx context.Context, codeHash []byte, u barrage.User, now time.Time) (barrage.User, error) {
	var created barrage.User
	taken := false
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		row, err := s.q.InvitationRedeem(ctx, tx, codeHash)
		if errors.Is(err, pgx.ErrNoRows) {
			return s.whyNotRedeemable(ctx, tx, codeHash)
		}
		if err != nil {
			return err
		}
		inv := invitationFromRow(row)
		u.Role = inv.Role
		u.License = nil
		if inv.License != nil {
			l := inv.License.Issue(now)
			u.License = &l
		}
		p := userParams(u)
		// In a savepoint: an email already registered keeps the redemption, so that trying an
		// address costs a use of the code whether or not it has an account (ErrEmailTaken).
		insert, err := tx.Begin(ctx)
		if err != nil {
			return err
		}
		userRow, err := s.q.UserInsert(ctx, insert, dbsqlc.UserInsertParams{
			ID: u.ID, Email: u.Email, Name: u.Name, PasswordHash: u.PasswordHash, Role: string(u.Role),
			LicensePlan: p.LicensePlan, LicenseMaxVus: p.LicenseMaxVus, LicenseMaxRunSeconds: p.LicenseMaxRunSeconds,
			LicenseMaxConcurrentRuns: p.LicenseMaxConcurrentRuns, LicenseValidUntil: p.LicenseValidUntil, LicenseQuotas: p.LicenseQuotas,
			InvitationID: &inv.ID, // the invitation's uses list the account
		})
		if err != nil {
			_ = insert.Rollback(ctx)
			if errors.Is(translate(err, ""), barrage.ErrConflict) {
				taken = true
				return nil
			}
			return err
		}
		if err := insert.Commit(ctx); err != nil {
			return err
		}
		created = userFromRow(userRow)
		return nil
	})
	if err == nil && taken {
		return barrage.User{}, ErrEmailTaken
	}
	return created, err
}

// ErrEmailTaken is CreateUserFromInvitation's answer for an email that already has an account:
// the code's use was spent all the same.
var ErrEmailTaken = errors.New("an account with this email already exists")

// whyNotRedeemable explains a failed redemption: unknown, revoked, expired or used up.
func (s *Store) whyNotRedeemable(ctx context.Context, tx pgx.Tx, codeHash []byte) error {
	row, err := s.q.InvitationGetByCodeHash(ctx, tx, codeHash)
	if errors.Is(err, pgx.ErrNoRows) {
		return barrage.Invalid("invitation_code", "unknown invitation code")
	}
	if err != nil {
		return err
	}
	switch {
	case row.RevokedAt != nil:
		return barrage.Errorf(barrage.ErrConflict, "this invitation code has been revoked")
	case row.UsesLeft == 0:
		return barrage.Errorf(barrage.ErrConflict, "this invitation code has already been used")
	default:
		return barrage.Errorf(barrage.ErrConflict, "this invitation code has expired")
	}
}

// UserByID returns the user with id.
func (s *Store) UserByID(ctx context.Context, id uuid.UUID) (barrage.User, error) {
	row, err := s.q.UserGetByID(ctx, s.pool, id)
	if err != nil {
		return barrage.User{}, translate(err, "user")
	}
	return userFromRow(row), nil
}

// UserWithActivity returns the user with id and what they have done, read together.
func (s *Store) UserWithActivity(ctx context.Context, id uuid.UUID) (barrage.User, barrage.UserActivity, error) {
	row, err := s.q.UserGetWithActivity(ctx, s.pool, id)
	if err != nil {
		return barrage.User{}, barrage.UserActivity{}, translate(err, "user")
	}
	return userFromRow(row.User), barrage.UserActivity{Tokens: row.LiveTokens, Runs: row.Runs, LastRunAt: row.LastRunAt}, nil
}

// UserByEmail returns the user with email, compared without case.
func (s *Store) UserByEmail(ctx context.Context, email string) (barrage.User, error) {
	row, err := s.q.UserGetByEmail(ctx, s.pool, email)
	if err != nil {
		return barrage.User{}, translate(err, "user")
	}
	return userFromRow(row), nil
}

// ListUsers returns up to limit users created after the one with id after, oldest first; when
// contains is not empty, only those whose email or name contains it, case aside.
func (s *Store) ListUsers(ctx context.Context, after *uuid.UUID, limit int, contains string) ([]barrage.User, error) {
	var pattern *string
	if contains != "" {
		pattern = ptr("%" + likeEscaper.Replace(contains) + "%")
	}
	rows, err := s.q.UserList(ctx, s.pool, dbsqlc.UserListParams{After: after, Pattern: pattern, MaxRows: int32(limit)})
	if err != nil {
		return nil, translate(err, "users")
	}
	users := make([]barrage.User, len(rows))
	for i, r := range rows {
		users[i] = userFromRow(r)
	}
	return users, nil
}

// likeEscaper escapes what LIKE reads as wildcards (% and _) and its escape character (\), so
// that text a person typed matches itself alone.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// UpdateUser changes the user with id through fn, under a row lock. When fn moves
// TokensValidAfter forward (password change, disabling), the user's refresh tokens are revoked in
// the same transaction, so that every session ends together; when revokeAPITokens is set or the
// user becomes disabled, so are their personal API tokens.
func (s *Store) UpdateUser(ctx context.Context, id uuid.UUID, fn func(*barrage.User) error, revokeAPITokens bool) (barrage.User, error) {
	var updated barrage.User
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		row, err := s.q.UserGetByIDForUpdate(ctx, tx, id)
		if err != nil {
			return translate(err, "user")
		}
		before := userFromRow(row)
		u := before
		if err := fn(&u); err != nil {
			return err
		}
		u.ID = before.ID
		row, err = s.q.UserUpdate(ctx, tx, userParams(u))
		if err != nil {
			return translate(err, "user with this email")
		}
		if u.TokensValidAfter.After(before.TokensValidAfter) {
			if err := s.q.RefreshTokenRevokeByUser(ctx, tx, id); err != nil {
				return err
			}
		}
		// A disabled user holds no personal API token: enabling the account again does not
		// bring back tokens that may have leaked with it.
		if revokeAPITokens || (u.Disabled && !before.Disabled) {
			if _, err := s.q.APITokenDeleteByUser(ctx, tx, id); err != nil {
				return err
			}
		}
		updated = userFromRow(row)
		return nil
	})
	return updated, err
}

func userFromRow(r dbsqlc.User) barrage.User {
	u := barrage.User{
		ID:               r.ID,
		Email:            r.Email,
		Name:             r.Name,
		PasswordHash:     r.PasswordHash,
		Role:             barrage.Role(r.Role),
		Disabled:         r.Disabled,
		TokensValidAfter: r.TokensValidAfter,
		GuessedAt:        r.GuessedAt,
		InvitationID:     r.InvitationID,
		CreatedAt:        r.CreatedAt,
		UpdatedAt:        r.UpdatedAt,
	}
	if r.LicensePlan != nil {
		u.License = &barrage.License{
			Plan:       *r.LicensePlan,
			Limits:     limitsFromRow(r.LicenseMaxVus, r.LicenseMaxRunSeconds, r.LicenseMaxConcurrentRuns),
			Quotas:     quotasFromRow(r.LicenseQuotas),
			ValidUntil: deref(r.LicenseValidUntil),
		}
	}
	return u
}

func userParams(u barrage.User) dbsqlc.UserUpdateParams {
	p := dbsqlc.UserUpdateParams{
		ID: u.ID, Email: u.Email, Name: u.Name, PasswordHash: u.PasswordHash, Role: string(u.Role),
		Disabled: u.Disabled, TokensValidAfter: u.TokensValidAfter, LicenseQuotas: []byte("{}"),
	}
	if l := u.License; l != nil {
		p.LicenseQuotas = quotasParam(l.Quotas)
		p.LicensePlan = &l.Plan
		p.LicenseMaxVus, p.LicenseMaxRunSeconds, p.LicenseMaxConcurrentRuns = limitsParams(l.Limits)
		p.LicenseValidUntil = &l.ValidUntil
	}
	return p
}

// quotasFromRow and quotasParam convert a license's own quotas, kept as a JSON object by name
// (storage_bytes, tests...), which users and invitations share. The store alone writes them.
func quotasFromRow(b []byte) barrage.Quotas {
	var q barrage.Quotas
	_ = json.Unmarshal(b, &q) // what quotasParam wrote; a quota not there is the server's default
	return q
}

func quotasParam(q barrage.Quotas) []byte {
	b, _ := json.Marshal(q) // five numbers
	return b
}

// limitsFromRow and limitsParams convert the three limit columns that users and invitations share.
func limitsFromRow(maxVUs, maxRunSeconds, maxConcurrentRuns *int32) barrage.Limits {
	return barrage.Limits{
		MaxVUs:            int(deref(maxVUs)),
		MaxRunDuration:    time.Duration(deref(maxRunSeconds)) * time.Second,
		MaxConcurrentRuns: int(deref(maxConcurrentRuns)),
	}
}

func limitsParams(l barrage.Limits) (maxVUs, maxRunSeconds, maxConcurrentRuns *int32) {
	return ptr(int32(l.MaxVUs)), ptr(int32(l.MaxRunDuration / time.Second)), ptr(int32(l.MaxConcurrentRuns))
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// TouchSignInAddress records that user signed in from client (an address, or an IPv6 /64) at at.
func (s *Store) TouchSignInAddress(ctx context.Context, user uuid.UUID, client string, at time.Time) error {
	return s.q.SignInAddressTouch(ctx, s.pool, dbsqlc.SignInAddressTouchParams{UserID: user, Client: client, At: at})
}

// KnownSignInAddress reports whether user signed in from client since since.
func (s *Store) KnownSignInAddress(ctx context.Context, user uuid.UUID, client string, since time.Time) (bool, error) {
	return s.q.SignInAddressKnown(ctx, s.pool, dbsqlc.SignInAddressKnownParams{UserID: user, Client: client, Since: since})
}

// MarkGuessed records that user's password is being guessed from many addresses, at at; it
// reports whether this is news (nothing recorded in the hour before).
func (s *Store) MarkGuessed(ctx context.Context, user uuid.UUID, at time.Time) (bool, error) {
	since := at.Add(-time.Hour)
	n, err := s.q.UserGuessed(ctx, s.pool, dbsqlc.UserGuessedParams{ID: user, At: &at, Since: &since})
	return n > 0, err
}
