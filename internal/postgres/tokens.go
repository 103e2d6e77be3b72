package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/postgres/dbsqlc"
)

// CreateRefreshToken stores a refresh token of the session family familyID.
func (s *Store) CreateRefreshToken(ctx context.Context, userID, familyID uuid.UUID, hash []byte, expires time.Time) error {
	return translate(s.q.RefreshTokenInsert(ctx, s.pool, dbsqlc.RefreshTokenInsertParams{
		ID: uuid.Must(uuid.NewV7()), UserID: userID, FamilyID: familyID, TokenHash: hash, ExpiresAt: expires,
	}), "refresh token")
}

// errRefreshRefused is the answer to every refresh token that cannot be exchanged.
var errRefreshRefused = barrage.Errorf(barrage.ErrUnauthorized, "the refresh token is invalid, expired or revoked")

// RotateRefreshToken exchanges the live refresh token oldHash for newHash in the same family and
// returns its user. Presenting a token that was already exchanged means it was copied: the whole
// family is revoked (committed even though the call fails), so neither copy works again.
//
// Every change to a user's refresh tokens first locks the user's row (UserGetForTokenChange):
// a rotation and a revocation of the same family, or a rotation and a password change, run one
// after the other, so a revocation always sees the token a concurrent rotation minted.
func (s *Store) RotateRefreshToken(ctx context.Context, oldHash, newHash []byte, expires time.Time) (barrage.User, error) {
	var (
		user  barrage.User
		reuse bool
	)
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		prev, err := s.q.RefreshTokenGetByHash(ctx, tx, oldHash)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // unknown: refused below
		}
		if err != nil {
			return err
		}
		row, err := s.q.UserGetForTokenChange(ctx, tx, prev.UserID)
		if err != nil {
			return translate(err, "user")
		}
		old, err := s.q.RefreshTokenUse(ctx, tx, oldHash)
		if errors.Is(err, pgx.ErrNoRows) {
			// Read again under the lock: a concurrent rotation or revocation has finished.
			prev, err := s.q.RefreshTokenGetByHash(ctx, tx, oldHash)
			if err != nil || prev.UsedAt == nil || prev.RevokedAt != nil {
				return err // expired or already revoked: nothing to do, refused below
			}
			reuse = true
			return s.q.RefreshTokenRevokeFamily(ctx, tx, prev.FamilyID)
		}
		if err != nil {
			return err
		}
		if row.Disabled {
			return errRefreshRefused
		}
		user = userFromRow(row)
		return s.q.RefreshTokenInsert(ctx, tx, dbsqlc.RefreshTokenInsertParams{
			ID: uuid.Must(uuid.NewV7()), UserID: old.UserID, FamilyID: old.FamilyID, TokenHash: newHash, ExpiresAt: expires,
		})
	})
	switch {
	case err != nil:
		return barrage.User{}, err
	case reuse:
		return barrage.User{}, barrage.Errorf(barrage.ErrUnauthorized, "this refresh token was already used; its session has been signed out")
	case user.ID == uuid.Nil:
		return barrage.User{}, errRefreshRefused
	}
	return user, nil
}

// RevokeRefreshFamily revokes every token of the family the token hash belongs to, under the
// user's row lock (see RotateRefreshToken). An unknown token is not an error: signing out is
// idempotent.
func (s *Store) RevokeRefreshFamily(ctx context.Context, hash []byte) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		row, err := s.q.RefreshTokenGetByHash(ctx, tx, hash)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := s.q.UserGetForTokenChange(ctx, tx, row.UserID); err != nil {
			return translate(err, "user")
		}
		return s.q.RefreshTokenRevokeFamily(ctx, tx, row.FamilyID)
	})
}

// CreateAPIToken stores t with the hash of its secret, up to barrage.MaxAPITokens of the user's
// live ones. Names are unique per user.
func (s *Store) CreateAPIToken(ctx context.Context, t barrage.APIToken, hash []byte) (barrage.APIToken, error) {
	scopes := make([]string, len(t.Scopes))
	for i, sc := range t.Scopes {
		scopes[i] = string(sc)
	}
	var row dbsqlc.APIToken
	err := s.underCap(ctx, t.UserID, func(tx pgx.Tx) (int64, error) { return s.q.APITokenCountLive(ctx, tx, t.UserID) },
		barrage.MaxAPITokens, "personal API tokens", func(tx pgx.Tx) (err error) {
			row, err = s.q.APITokenInsert(ctx, tx, dbsqlc.APITokenInsertParams{
				ID: t.ID, UserID: t.UserID, Name: t.Name, TokenHash: hash, Scopes: scopes, ExpiresAt: t.ExpiresAt, ProjectID: t.ProjectID,
			})
			return err
		})
	if err != nil {
		if errors.Is(translate(err, ""), barrage.ErrConflict) {
			return barrage.APIToken{}, barrage.Errorf(barrage.ErrConflict, "you already have a token named %q", t.Name)
		}
		return barrage.APIToken{}, err
	}
	return apiTokenFromRow(row), nil
}

// ListAPITokens returns up to limit of the user's tokens older than the one with id before,
// newest first.
func (s *Store) ListAPITokens(ctx context.Context, userID uuid.UUID, before *uuid.UUID, limit int) ([]barrage.APIToken, error) {
	rows, err := s.q.APITokenListByUser(ctx, s.pool, dbsqlc.APITokenListByUserParams{UserID: userID, Before: before, MaxRows: int32(limit)})
	if err != nil {
		return nil, translate(err, "tokens")
	}
	ts := make([]barrage.APIToken, len(rows))
	for i, r := range rows {
		ts[i] = apiTokenFromRow(r)
	}
	return ts, nil
}

// DeleteAPIToken deletes the user's token id. Another user's token is not found.
func (s *Store) DeleteAPIToken(ctx context.Context, userID, id uuid.UUID) error {
	n, err := s.q.APITokenDelete(ctx, s.pool, dbsqlc.APITokenDeleteParams{ID: id, UserID: userID})
	if err != nil {
		return translate(err, "token")
	}
	if n == 0 {
		return barrage.Errorf(barrage.ErrNotFound, "token not found")
	}
	return nil
}

// APITokenByHash returns the token whose secret hashes to hash, and its owner.
func (s *Store) APITokenByHash(ctx context.Context, hash []byte) (barrage.APIToken, barrage.User, error) {
	row, err := s.q.APITokenGetWithUser(ctx, s.pool, hash)
	if err != nil {
		return barrage.APIToken{}, barrage.User{}, translate(err, "token")
	}
	return apiTokenFromRow(row.APIToken), userFromRow(row.User), nil
}

// TouchAPIToken records that token id was used now.
func (s *Store) TouchAPIToken(ctx context.Context, id uuid.UUID) error {
	return translate(s.q.APITokenTouch(ctx, s.pool, id), "token")
}

func apiTokenFromRow(r dbsqlc.APIToken) barrage.APIToken {
	scopes := make([]barrage.Scope, len(r.Scopes))
	for i, sc := range r.Scopes {
		scopes[i] = barrage.Scope(sc)
	}
	return barrage.APIToken{
		ID: r.ID, UserID: r.UserID, Name: r.Name, Scopes: scopes,
		CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, LastUsedAt: r.LastUsedAt, ProjectID: r.ProjectID,
	}
}

// TakeToken refills key's bucket, which holds at most capacity tokens and gains perSecond a
// second, to now, and takes cost tokens from it (0 only looks) when it holds at least one. It
// returns whether it held one, and when it will if not. Every replica shares the buckets.
func (s *Store) TakeToken(ctx context.Context, key string, capacity, perSecond, cost float64, now time.Time) (bool, time.Duration, error) {
	var ok bool
	var wait time.Duration
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		tokens := capacity
		row, err := s.q.RateBucketGetForUpdate(ctx, tx, key)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		default:
			tokens = min(capacity, row.Tokens+max(now.Sub(row.UpdatedAt).Seconds(), 0)*perSecond)
		}
		if ok = tokens >= 1; ok {
			tokens -= cost
		} else {
			wait = time.Duration((1 - tokens) / perSecond * float64(time.Second))
		}
		return s.q.RateBucketPut(ctx, tx, dbsqlc.RateBucketPutParams{Key: key, Tokens: tokens, UpdatedAt: now})
	})
	return ok, wait, translate(err, "rate limit")
}

// Throttle takes cost attempts (0 only looks) from key's bucket of rate r, and refuses the
// attempt with a *barrage.RateLimitError saying when to come back when the bucket is empty.
func (s *Store) Throttle(ctx context.Context, key string, r barrage.Rate, cost float64, now time.Time) error {
	if r.N <= 0 || r.Per <= 0 {
		return nil
	}
	ok, wait, err := s.TakeToken(ctx, key, float64(r.N), float64(r.N)/r.Per.Seconds(), cost, now)
	if err != nil {
		return err
	}
	if !ok {
		return &barrage.RateLimitError{RetryAfterSeconds: max(int((wait+time.Second-1)/time.Second), 1)}
	}
	return nil
}

// DeleteExpired removes rate buckets untouched since before, refresh tokens that expired before
// it, and agent pings and jobs made before it.
func (s *Store) DeleteExpired(ctx context.Context, before time.Time) (int64, error) {
	a, err := s.q.RateBucketDeleteBefore(ctx, s.pool, before)
	if err != nil {
		return 0, err
	}
	b, err := s.q.RefreshTokenDeleteExpired(ctx, s.pool, before)
	if err != nil {
		return 0, err
	}
	c, err := s.q.AgentPingDeleteOld(ctx, s.pool, before)
	if err != nil {
		return 0, err
	}
	d, err := s.q.AgentJobDeleteOld(ctx, s.pool, before)
	return a + b + c + d, err
}
