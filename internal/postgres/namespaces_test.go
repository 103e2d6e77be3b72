package postgres_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/pgtest"
	"github.com/barrage-load/barrage/internal/postgres"
	"github.com/barrage-load/barrage/internal/registry"
)

// A namespace is claimed once, first come, even by claims at the same moment; only its owners
// change it, another user's attempts answer as if it were not there; its last owner stays; a
// key is registered once and retired without being forgotten.
func TestNamespacesAreClaimedOnceAndChangedByTheirOwners(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	store := postgres.NewStore(pool)
	alice := newUser(t, pool, store, "alice@example.com")
	bob := newUser(t, pool, store, "bob@example.com")

	// Eight claims of one name at once: exactly one wins.
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		owner := alice.ID
		if i%2 == 1 {
			owner = bob.ID
		}
		wg.Go(func() { _, errs[i] = store.ClaimNamespace(ctx, "acme", owner, false, postgres.Quota{}) })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
		} else {
			require.ErrorIs(t, err, barrage.ErrConflict)
			require.ErrorContains(t, err, `namespace "acme" is taken`)
		}
	}
	require.Equal(t, 1, won)
	ns, err := store.Namespace(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, ns.Owners, 1)
	owner, other := ns.Owners[0], bob.ID
	if owner == bob.ID {
		other = alice.ID
	}

	_, err = store.ClaimNamespace(ctx, "Not-Valid", alice.ID, false, postgres.Quota{})
	require.ErrorIs(t, err, barrage.ErrInvalid, "the schema holds names to the rule too")

	// Another user's attempts are not found, and change nothing.
	require.ErrorIs(t, store.AddNamespaceOwner(ctx, "acme", other, other), barrage.ErrNotFound)
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	key := registry.PublicKey(pub)
	_, err = store.AddSigningKey(ctx, "acme", other, key.ID(), key)
	require.ErrorIs(t, err, barrage.ErrNotFound)

	k, err := store.AddSigningKey(ctx, "acme", owner, key.ID(), key)
	require.NoError(t, err)
	require.Equal(t, key.ID(), k.ID)
	_, err = store.AddSigningKey(ctx, "acme", owner, key.ID(), key)
	require.ErrorIs(t, err, barrage.ErrConflict)
	_, err = store.RetireSigningKey(ctx, "acme", other, key.ID())
	require.ErrorIs(t, err, barrage.ErrNotFound)
	retired, err := store.RetireSigningKey(ctx, "acme", owner, key.ID())
	require.NoError(t, err)
	require.NotNil(t, retired.RetiredAt)
	again, err := store.RetireSigningKey(ctx, "acme", owner, key.ID())
	require.NoError(t, err)
	require.Equal(t, retired.RetiredAt, again.RetiredAt, "retired once")
	ns, err = store.Namespace(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, ns.Keys, 1, "a retired key is kept: it verifies what it signed")

	// Co-owners; the last owner stays.
	require.NoError(t, store.AddNamespaceOwner(ctx, "acme", owner, other))
	mine, err := store.NamespacesOf(ctx, other)
	require.NoError(t, err)
	require.Len(t, mine, 1)
	require.NoError(t, store.RemoveNamespaceOwner(ctx, "acme", other, owner))
	require.ErrorIs(t, store.RemoveNamespaceOwner(ctx, "acme", other, other), barrage.ErrConflict)
	ns, err = store.Namespace(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{other}, ns.Owners)

	// An admin's reservation is a namespace too: taken for everyone else.
	_, err = store.ClaimNamespace(ctx, "barrage", alice.ID, true, postgres.Quota{})
	require.NoError(t, err)
	_, err = store.ClaimNamespace(ctx, "barrage", bob.ID, false, postgres.Quota{})
	require.ErrorIs(t, err, barrage.ErrConflict)
}
