package market_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/blob"
	"github.com/barrage-load/barrage/internal/market"
	"github.com/barrage-load/barrage/internal/pgtest"
	"github.com/barrage-load/barrage/internal/postgres"
	"github.com/barrage-load/barrage/internal/registry"
	"github.com/barrage-load/barrage/internal/registry/registrytest"
)

// shop is a marketplace on its own database and blob folder, with its users.
type shop struct {
	t     *testing.T
	store *postgres.Store
	blobs blob.Store
	svc   *market.Service
}

func newShop(t *testing.T) *shop {
	t.Helper()
	store := postgres.NewStore(pgtest.Pool(t))
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	return &shop{t: t, store: store, blobs: blobs, svc: market.New(store, blobs, slog.New(slog.DiscardHandler), market.Config{})}
}

// user signs up a user of role through an invitation, as the accounts service would.
func (s *shop) user(email string, role barrage.Role) barrage.Principal {
	s.t.Helper()
	ctx := context.Background()
	code := []byte("code-" + email)
	_, err := s.store.CreateInvitation(ctx, barrage.Invitation{ID: uuid.Must(uuid.NewV7()), Role: role, License: &barrage.DemoLicense,
		UsesTotal: 1, UsesLeft: 1, ExpiresAt: time.Now().Add(time.Hour)}, code)
	require.NoError(s.t, err)
	u, err := s.store.CreateUserFromInvitation(ctx, code, barrage.User{ID: uuid.Must(uuid.NewV7()), Email: email, Name: "N", PasswordHash: "h"}, time.Now())
	require.NoError(s.t, err)
	return barrage.Principal{User: u, Scopes: []barrage.Scope{barrage.ScopeRead, barrage.ScopeWrite}}
}

// author claims ns for p and adds a fresh signing key to it, returning the key.
func (s *shop) author(p barrage.Principal, ns string) ed25519.PrivateKey {
	s.t.Helper()
	_, err := s.svc.ClaimNamespace(context.Background(), p, ns, false)
	require.NoError(s.t, err)
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(s.t, err)
	_, err = s.svc.AddSigningKey(context.Background(), p, ns, registry.PublicKey(pub).String(), registry.ProveKey(priv, ns))
	require.NoError(s.t, err)
	return priv
}

// manifest is version of name with one linux/amd64 artifact of data, signed by key.
func manifest(t *testing.T, key ed25519.PrivateKey, name, version string, data []byte) market.Manifest {
	t.Helper()
	sum := sha256.Sum256(data)
	a := barrage.PluginArtifact{OS: "linux", Arch: "amd64", Format: "elf", File: registry.ArtifactFile(name, version, "linux", "amd64"),
		SHA256: hex.EncodeToString(sum[:]), Size: int64(len(data))}
	sums, err := registry.FormatSums([]registry.Sum{{SHA256: a.SHA256, Name: a.File}})
	require.NoError(t, err)
	return market.Manifest{Version: version, Kinds: []string{"session-element"}, Description: "makes test data", Readme: "# " + name,
		License: "MIT", Tags: []string{"data"}, Protocols: []int{1}, Artifacts: []barrage.PluginArtifact{a}, Signature: registry.Sign(key, sums)}
}

// publish publishes m with body as its artifact, returning the committed version or the error.
func (s *shop) publish(p barrage.Principal, ns, name string, m market.Manifest, body []byte) (barrage.PluginVersion, error) {
	s.t.Helper()
	ctx := context.Background()
	up, err := s.svc.Publish(ctx, p, ns, name, m)
	if err != nil {
		return barrage.PluginVersion{}, err
	}
	if err := up.Artifact(ctx, m.Artifacts[0].File, bytes.NewReader(body)); err != nil {
		up.Abort(ctx)
		return barrage.PluginVersion{}, err
	}
	return up.Commit(ctx)
}

// An author's version waits for review, seen by its author and admins alone; approved, anyone
// finds it and downloads the very bytes that were signed.
func TestAVersionIsReviewedBeforeAnyoneElseSeesIt(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	ctx := context.Background()
	alice, bob, admin := s.user("alice@example.com", barrage.RoleUser), s.user("bob@example.com", barrage.RoleUser), s.user("root@example.com", barrage.RoleAdmin)
	key := s.author(alice, "acme")
	data := registrytest.TinyELF("amd64", []byte("random data 1.0.0"))

	v, err := s.publish(alice, "acme", "random-data", manifest(t, key, "random-data", "1.0.0", data), data)
	require.NoError(t, err)
	require.Equal(t, barrage.VersionPending, v.State)
	_, err = s.svc.Plugin(ctx, bob, "acme", "random-data")
	require.ErrorIs(t, err, barrage.ErrNotFound, "a pending version is nobody else's to see")
	_, err = s.svc.Plugin(ctx, alice, "acme", "random-data")
	require.NoError(t, err)
	pending, err := s.svc.Pending(ctx, 10)
	require.NoError(t, err)
	require.Len(t, pending, 1)

	_, err = s.svc.Approve(ctx, admin, "acme", "random-data", "1.0.0", "")
	require.NoError(t, err)
	found, _, err := s.svc.Search(ctx, bob, market.Search{Q: "rand"})
	require.NoError(t, err)
	require.Len(t, found, 1)
	dl, err := s.svc.Download(ctx, bob, "acme", "random-data", "1.0.0", "linux", "amd64")
	require.NoError(t, err)
	require.Equal(t, v.Artifacts[0].SHA256, dl.Artifact.SHA256)
	r, _, err := s.svc.Open(ctx, bob, "acme", "random-data", "1.0.0", "linux", "amd64")
	require.NoError(t, err)
	got, err := io.ReadAll(r)
	require.NoError(t, r.Close())
	require.NoError(t, err)
	require.Equal(t, data, got)

	_, err = s.publish(alice, "acme", "random-data", manifest(t, key, "random-data", "1.0.0", data), data)
	require.ErrorIs(t, err, barrage.ErrConflict, "a version never changes")
}

// A publish refused stores nothing: not into another's namespace, not signed by a key of the
// namespace, not with bytes other than those signed.
func TestAPublishRefusedStoresNothing(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	ctx := context.Background()
	alice, bob := s.user("alice@example.com", barrage.RoleUser), s.user("bob@example.com", barrage.RoleUser)
	key := s.author(alice, "acme")
	data := registrytest.TinyELF("amd64", []byte("tool 1.0.0"))

	_, err := s.publish(bob, "acme", "tool", manifest(t, key, "tool", "1.0.0", data), data)
	require.ErrorIs(t, err, barrage.ErrNotFound, "bob owns no namespace acme")

	_, stranger, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	_, err = s.publish(alice, "acme", "tool", manifest(t, stranger, "tool", "1.0.0", data), data)
	var inv *barrage.InvalidError
	require.ErrorAs(t, err, &inv)
	require.Equal(t, "manifest.signature", inv.Fields[0].Field)

	other := registrytest.TinyELF("amd64", []byte("not what was signed"))
	_, err = s.publish(alice, "acme", "tool", manifest(t, key, "tool", "1.0.0", data), other)
	require.Error(t, err, "bytes that are not the signed ones")
	_, err = s.svc.Plugin(ctx, alice, "acme", "tool")
	require.ErrorIs(t, err, barrage.ErrNotFound, "no version was stored")
	for _, b := range [][]byte{data, other} {
		sum := sha256.Sum256(b)
		_, err := s.blobs.Stat(ctx, hex.EncodeToString(sum[:]))
		require.ErrorIs(t, err, blob.ErrNotFound, "no artifact was kept")
	}
}

// A namespace's keys are proven by their holder, its owners are never none, and what is
// reviewed says why when it is refused or withdrawn.
func TestNamespacesKeysOwnersAndReasons(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	ctx := context.Background()
	alice, bob, admin := s.user("alice@example.com", barrage.RoleUser), s.user("bob@example.com", barrage.RoleUser), s.user("root@example.com", barrage.RoleAdmin)
	key := s.author(alice, "acme")

	pub, _, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	_, err = s.svc.AddSigningKey(ctx, alice, "acme", registry.PublicKey(pub).String(), registry.ProveKey(key, "acme"))
	require.ErrorIs(t, err, barrage.ErrInvalid, "a key proven by another key's holder")

	_, err = s.svc.RemoveNamespaceOwner(ctx, alice, "acme", alice.User.ID)
	require.Error(t, err, "the last owner stays")
	_, err = s.svc.AddNamespaceOwner(ctx, alice, "acme", bob.User.ID)
	require.NoError(t, err)
	data := registrytest.TinyELF("amd64", []byte("tool 2.0.0"))
	_, err = s.publish(bob, "acme", "tool", manifest(t, key, "tool", "2.0.0", data), data)
	require.NoError(t, err, "an owner publishes with the namespace's key")

	_, err = s.svc.Reject(ctx, admin, "acme", "tool", "2.0.0", "  ")
	require.ErrorIs(t, err, barrage.ErrInvalid, "a refusal says why")
	_, err = s.svc.Reject(ctx, bob, "acme", "tool", "2.0.0", "I changed my mind")
	require.ErrorIs(t, err, barrage.ErrForbidden, "only admins review")
	v, err := s.svc.Reject(ctx, admin, "acme", "tool", "2.0.0", "the artifact phones home to an unlisted host")
	require.NoError(t, err)
	require.Equal(t, barrage.VersionRejected, v.State)
	_, err = s.svc.ClaimNamespace(ctx, bob, "acme", false)
	require.ErrorIs(t, err, barrage.ErrConflict, "a claimed name is taken")
}
