package postgres_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/pgtest"
	"github.com/barrage-load/barrage/internal/postgres"
)

// A check records its outcome: verified_at moves to the check's time when it proved control
// and is cleared when it did not; another account's target is not found.
func TestTargetChecksAreRecordedForTheirOwnerAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	store := postgres.NewStore(pool)
	owner := newUser(t, pool, store, "owner@example.com")
	other := newUser(t, pool, store, "other@example.com")
	mine, theirs := []uuid.UUID{personal(t, store, owner.ID)}, []uuid.UUID{personal(t, store, other.ID)}
	tg, err := store.CreateTarget(ctx, barrage.Target{ID: uuid.Must(uuid.NewV7()), OwnerID: owner.ID, ProjectID: mine[0], Scheme: "http", Host: "127.0.0.1", Port: 8080, Token: "tok"}, postgres.Quota{})
	require.NoError(t, err)
	require.False(t, tg.Verified())

	at := time.Now().UTC().Truncate(time.Millisecond)
	tg, err = store.TargetChecked(ctx, mine, tg.ID, at, netip.MustParseAddr("127.0.0.1"), "")
	require.NoError(t, err)
	require.True(t, tg.Verified())
	require.Equal(t, "127.0.0.1:8080@127.0.0.1", tg.Pinned())
	require.WithinDuration(t, at, *tg.VerifiedAt, time.Millisecond)
	tg, err = store.TargetChecked(ctx, mine, tg.ID, at.Add(time.Minute), netip.Addr{}, "answered 404")
	require.NoError(t, err)
	require.False(t, tg.Verified())
	require.Equal(t, "answered 404", tg.CheckError)
	require.False(t, tg.Address.IsValid(), "a failed check pins nothing")

	_, err = store.TargetChecked(ctx, theirs, tg.ID, at, netip.MustParseAddr("127.0.0.1"), "")
	require.ErrorIs(t, err, barrage.ErrNotFound)
	_, err = store.Target(ctx, theirs, tg.ID)
	require.ErrorIs(t, err, barrage.ErrNotFound)
	require.ErrorIs(t, store.DeleteTarget(ctx, theirs, tg.ID), barrage.ErrNotFound)
	_, err = store.CreateTarget(ctx, barrage.Target{ID: uuid.Must(uuid.NewV7()), OwnerID: owner.ID, ProjectID: mine[0], Scheme: "https", Host: "127.0.0.1", Port: 8080, Token: "tok2"}, postgres.Quota{})
	require.ErrorIs(t, err, barrage.ErrConflict, "one target per host and port")
}

// A run bounded to no destination at all is stored and read back bounded: an empty array is not
// NULL, which would lift the bound.
func TestAnEmptyArrayIsNotNull(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	var empty, null []string
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT '{}'::text[], NULL::text[]`).Scan(&empty, &null))
	require.NotNil(t, empty)
	require.Nil(t, null)
}

// personal is user's personal project.
func personal(t *testing.T, store *postgres.Store, user uuid.UUID) uuid.UUID {
	t.Helper()
	m, err := store.Memberships(context.Background(), user)
	require.NoError(t, err)
	id, err := barrage.Principal{Memberships: m}.HomeProject()
	require.NoError(t, err)
	return id
}
