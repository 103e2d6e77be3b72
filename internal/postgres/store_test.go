package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/pgtest"
	"github.com/barrage-load/barrage/internal/postgres"
)

func TestMigrateIsIdempotentAndConcurrentSafe(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t) // already migrated by the harness
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := postgres.Migrate(ctx, pool)
			if err == nil && len(res.Applied) > 0 {
				err = context.Canceled // nothing should be pending
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, postgres.CheckSchema(ctx, pool))
}

func TestFreshDatabaseMigratesFromZero(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	// Drop everything to see a real first migration.
	_, err := pool.Exec(ctx, "DROP SCHEMA public CASCADE; CREATE SCHEMA public")
	require.NoError(t, err)
	require.ErrorContains(t, postgres.CheckSchema(ctx, pool), "pending")
	res, err := postgres.Migrate(ctx, pool)
	require.NoError(t, err)
	ms, err := postgres.Migrations()
	require.NoError(t, err)
	require.Equal(t, 0, res.From)
	require.Equal(t, ms[len(ms)-1].Version, res.To)
	require.Len(t, res.Applied, len(ms))
	require.NoError(t, postgres.CheckSchema(ctx, pool))
}

func TestSchemaNewerThanBinaryIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	_, err := pool.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES (9999, '9999_future.sql')")
	require.NoError(t, err)
	_, err = postgres.Migrate(ctx, pool)
	require.ErrorIs(t, err, postgres.ErrSchemaTooNew)
	require.ErrorIs(t, postgres.CheckSchema(ctx, pool), postgres.ErrSchemaTooNew)
	require.Error(t, postgres.NewStore(pool).Ready(ctx))
}

func TestFirstAdminInvitationIsIssuedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := postgres.NewStore(pgtest.Pool(t))
	var wg sync.WaitGroup
	var mu sync.Mutex
	created := 0
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := store.EnsureFirstAdminInvitation(ctx, func() (barrage.Invitation, []byte) {
				id := uuid.Must(uuid.NewV7())
				return barrage.Invitation{ID: id, Role: barrage.RoleAdmin, UsesTotal: 1, UsesLeft: 1, ExpiresAt: time.Now().Add(time.Hour)}, id[:]
			})
			assert.NoError(t, err)
			if ok {
				mu.Lock()
				created++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 1, created)
}

func newUser(t *testing.T, pool *pgxpool.Pool, store *postgres.Store, email string) barrage.User {
	t.Helper()
	ctx := context.Background()
	code := []byte("code-" + email)
	_, err := store.CreateInvitation(ctx, barrage.Invitation{
		ID: uuid.Must(uuid.NewV7()), Role: barrage.RoleUser, License: &barrage.DemoLicense, UsesTotal: 1, UsesLeft: 1, ExpiresAt: time.Now().Add(time.Hour),
	}, code)
	require.NoError(t, err)
	u, err := store.CreateUserFromInvitation(ctx, code, barrage.User{ID: uuid.Must(uuid.NewV7()), Email: email, Name: "N", PasswordHash: "h"}, time.Now())
	require.NoError(t, err)
	return u
}

func TestStoreScopesTokensToTheirOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	store := postgres.NewStore(pool)
	alice := newUser(t, pool, store, "alice@example.com")
	bob := newUser(t, pool, store, "bob@example.com")
	require.Equal(t, barrage.RoleUser, alice.Role)
	require.Equal(t, 100, alice.License.Limits.MaxVUs)

	tok, err := store.CreateAPIToken(ctx, barrage.APIToken{ID: uuid.Must(uuid.NewV7()), UserID: alice.ID, Name: "t", Scopes: []barrage.Scope{barrage.ScopeRead}, ExpiresAt: time.Now().Add(time.Hour)}, []byte("hash-a"))
	require.NoError(t, err)
	_, err = store.CreateAPIToken(ctx, barrage.APIToken{ID: uuid.Must(uuid.NewV7()), UserID: alice.ID, Name: "t", Scopes: []barrage.Scope{barrage.ScopeRead}, ExpiresAt: time.Now().Add(time.Hour)}, []byte("hash-b"))
	require.ErrorIs(t, err, barrage.ErrConflict)

	require.ErrorIs(t, store.DeleteAPIToken(ctx, bob.ID, tok.ID), barrage.ErrNotFound)
	list, err := store.ListAPITokens(ctx, bob.ID, nil, 10)
	require.NoError(t, err)
	require.Empty(t, list)
	got, owner, err := store.APITokenByHash(ctx, []byte("hash-a"))
	require.NoError(t, err)
	require.Equal(t, tok.ID, got.ID)
	require.Equal(t, alice.ID, owner.ID)
	require.NoError(t, store.DeleteAPIToken(ctx, alice.ID, tok.ID))
	_, _, err = store.APITokenByHash(ctx, []byte("hash-a"))
	require.ErrorIs(t, err, barrage.ErrNotFound)
}

func TestUpdateUserRollsBackOnError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	store := postgres.NewStore(pool)
	alice := newUser(t, pool, store, "alice@example.com")
	newUser(t, pool, store, "bob@example.com")
	_, err := store.UpdateUser(ctx, alice.ID, func(u *barrage.User) error {
		u.Email = "BOB@example.com" // taken, case-insensitively
		return nil
	}, false)
	require.ErrorIs(t, err, barrage.ErrConflict)
	again, err := store.UserByID(ctx, alice.ID)
	require.NoError(t, err)
	require.Equal(t, "alice@example.com", again.Email)
	_, err = store.UserByID(ctx, uuid.Must(uuid.NewV7()))
	require.ErrorIs(t, err, barrage.ErrNotFound)
}

// An account records the invitation it was made with, and the invitation lists it; a use spent
// on an email that had an account made none, and lists nobody.
func TestAnInvitationListsTheAccountsItMade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := postgres.NewStore(pgtest.Pool(t))
	inv, err := store.CreateInvitation(ctx, barrage.Invitation{
		ID: uuid.Must(uuid.NewV7()), Role: barrage.RoleUser, UsesTotal: 3, UsesLeft: 3, ExpiresAt: time.Now().Add(time.Hour),
	}, []byte("code-three"))
	require.NoError(t, err)
	alice, err := store.CreateUserFromInvitation(ctx, []byte("code-three"), barrage.User{ID: uuid.Must(uuid.NewV7()), Email: "alice@example.com", Name: "Alice", PasswordHash: "h"}, time.Now())
	require.NoError(t, err)
	require.Equal(t, &inv.ID, alice.InvitationID)
	_, err = store.CreateUserFromInvitation(ctx, []byte("code-three"), barrage.User{ID: uuid.Must(uuid.NewV7()), Email: "ALICE@example.com", Name: "Again", PasswordHash: "h"}, time.Now())
	require.ErrorIs(t, err, postgres.ErrEmailTaken)
	again, err := store.UserByID(ctx, alice.ID)
	require.NoError(t, err)
	require.Equal(t, &inv.ID, again.InvitationID)

	list, err := store.ListInvitations(ctx, nil, 10)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, 1, list[0].UsesLeft, "two uses spent")
	require.Equal(t, []barrage.InvitationUse{{UserID: alice.ID, Email: "alice@example.com", Name: "Alice", At: alice.CreatedAt}}, list[0].UsedBy)
}

// The errors of a database that is away, going or coming back are the ones a client may retry
// (503), and only those.
func TestUnavailableKnowsADatabaseAwayFromABadRequest(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		&pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"},
		&pgconn.PgError{Code: "57P03", Message: "the database system is starting up"},
		&pgconn.PgError{Code: "08006", Message: "connection failure"},
		fmt.Errorf("read run: %w", io.EOF),
		fmt.Errorf("read run: %w", io.ErrUnexpectedEOF),
		fmt.Errorf("read run: %w", pgconn.ErrConnClosed),
		&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")},
	} {
		require.True(t, postgres.Unavailable(err), "%v", err)
	}
	for _, err := range []error{
		&pgconn.PgError{Code: "23505", Message: "duplicate key"},
		&pgconn.PgError{Code: "22P02", Message: "invalid input syntax"},
		errors.New("something else"),
	} {
		require.False(t, postgres.Unavailable(err), "%v", err)
	}
}
