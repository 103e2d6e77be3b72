package httpapi_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/registry"
)

// A user claims a namespace and registers the key keygen printed; another user sees its keys
// but not its owners, cannot change it (404), and cannot claim it or an admin's reservation
// (409); bad names and keys are 422 naming the field.
func TestNamespacesAndTheirKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, u := b.adminAndUser()
	v := b.signup(b.invite(admin, map[string]any{"license": map[string]any{"template": "demo"}}), "other@example.com")

	r := b.do("POST", "/v1/namespaces", u.access, map[string]any{"name": "acme"})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	require.Equal(t, []any{u.id}, r.json(t)["owners"])
	p := requireProblem(t, b.do("POST", "/v1/namespaces", v.access, map[string]any{"name": "acme"}), http.StatusConflict)
	require.Contains(t, p["detail"], `namespace "acme" is taken`)
	for _, bad := range []string{"Acme", "1acme", "ac--me", "acme-", "ac_me"} {
		p := requireProblem(t, b.do("POST", "/v1/namespaces", v.access, map[string]any{"name": bad}), http.StatusUnprocessableEntity)
		requireField(t, p, "name")
	}

	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	key := registry.PublicKey(pub)
	keys := "/v1/namespaces/acme/keys"
	body := map[string]any{"public_key": key.String(), "proof": registry.ProveKey(priv, "acme")}
	requireProblem(t, b.do("POST", keys, v.access, body), http.StatusNotFound)
	r = b.do("POST", keys, u.access, body)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	require.Equal(t, key.ID(), r.json(t)["id"])
	requireProblem(t, b.do("POST", keys, u.access, body), http.StatusConflict)
	requireField(t, requireProblem(t, b.do("POST", keys, u.access, map[string]any{"public_key": "ed25519:AAAA", "proof": registry.ProveKey(priv, "acme")}), http.StatusUnprocessableEntity), "public_key")
	// Weak keys, for which one signature verifies every message: the identity and zero.
	for _, weak := range []string{"ed25519:AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "ed25519:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="} {
		p := requireProblem(t, b.do("POST", keys, u.access, map[string]any{"public_key": weak, "proof": make([]byte, 64)}), http.StatusUnprocessableEntity)
		require.Contains(t, requireField(t, p, "public_key"), "small order")
	}
	// Another's key, without its private half: a proof made for another namespace, or none
	// of this key, proves nothing.
	other, otherPriv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	for _, proof := range [][]byte{registry.ProveKey(otherPriv, "elsewhere"), registry.ProveKey(priv, "acme"), make([]byte, 64)} {
		p := requireProblem(t, b.do("POST", keys, u.access, map[string]any{"public_key": registry.PublicKey(other).String(), "proof": proof}), http.StatusUnprocessableEntity)
		requireField(t, p, "proof")
	}

	// Anyone signed in reads the keys, to verify signatures; only owners see the owners.
	seen := b.do("GET", "/v1/namespaces/acme", v.access, nil).json(t)
	require.Nil(t, seen["owners"])
	require.Equal(t, key.String(), seen["keys"].([]any)[0].(map[string]any)["public_key"])
	requireProblem(t, b.do("GET", "/v1/namespaces/nothing-here", v.access, nil), http.StatusNotFound)

	retire := keys + "/" + key.ID() + "/retire"
	requireProblem(t, b.do("POST", retire, v.access, nil), http.StatusNotFound)
	r = b.do("POST", retire, u.access, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.NotNil(t, r.json(t)["retired_at"])
	mine := b.do("GET", "/v1/namespaces", u.access, nil).json(t)["items"].([]any)
	require.Len(t, mine, 1)
	require.Len(t, mine[0].(map[string]any)["keys"], 1, "the list shows each namespace's keys")
	require.Equal(t, []any{u.id}, mine[0].(map[string]any)["owners"])
	require.Empty(t, b.do("GET", "/v1/namespaces", v.access, nil).json(t)["items"])

	// An admin's reservation: taken for everyone else; the route is for admins.
	requireProblem(t, b.do("POST", "/v1/admin/namespaces", u.access, map[string]any{"name": "barrage"}), http.StatusForbidden)
	r = b.do("POST", "/v1/admin/namespaces", admin.access, map[string]any{"name": "barrage"})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	require.Equal(t, true, r.json(t)["reserved"])
	requireProblem(t, b.do("POST", "/v1/namespaces", u.access, map[string]any{"name": "barrage"}), http.StatusConflict)
}

// A namespace's owners add co-owners by user id, who may then do all an owner may; any owner
// may remove any owner but the last. Another user's namespace is not found.
func TestANamespaceHasCoOwners(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, u := b.adminAndUser()
	v := b.signup(b.invite(admin, map[string]any{"license": map[string]any{"template": "demo"}}), "v@example.com")
	w := b.signup(b.invite(admin, map[string]any{"license": map[string]any{"template": "demo"}}), "w@example.com")
	b.author(u, "acme")
	owner := func(who user) string { return "/v1/namespaces/acme/owners/" + who.id }

	requireProblem(t, b.do("PUT", owner(w), v.access, nil), http.StatusNotFound)
	requireProblem(t, b.do("PUT", "/v1/namespaces/acme/owners/"+uuid.NewString(), u.access, nil), http.StatusNotFound)
	requireProblem(t, b.do("PUT", "/v1/namespaces/acme/owners/not-a-uuid", u.access, nil), http.StatusBadRequest)
	for range 2 { // adding again changes nothing
		r := b.do("PUT", owner(v), u.access, nil)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		require.Equal(t, []any{u.id, v.id}, r.json(t)["owners"])
	}

	// The co-owner publishes with a key of their own, and adds another.
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	r := b.do("POST", "/v1/namespaces/acme/keys", v.access, map[string]any{"public_key": registry.PublicKey(pub).String(), "proof": registry.ProveKey(priv, "acme")})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	require.Equal(t, http.StatusCreated, b.publish(v.access, randomData(priv, "1.0.0")).status)
	require.Equal(t, http.StatusOK, b.do("PUT", owner(w), v.access, nil).status)

	// Any owner removes any owner, not the last.
	r = b.do("DELETE", owner(u), w.access, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.Equal(t, []any{v.id, w.id}, r.json(t)["owners"])
	r = b.do("DELETE", owner(w), w.access, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.NotContains(t, r.json(t), "owners", "who is no longer an owner does not see them")
	requireProblem(t, b.do("DELETE", owner(v), v.access, nil), http.StatusConflict)
	// A former owner changes nothing more.
	requireProblem(t, b.do("PUT", owner(u), u.access, nil), http.StatusNotFound)
	requireProblem(t, b.do("POST", "/v1/plugins/acme/random-data/versions/1.0.0/deprecate", u.access, map[string]any{"reason": "x"}), http.StatusNotFound)
}

// The service's own names are reserved on a fresh install, and so are the operator's: no user
// claims them, an admin may. A name a user squatted an admin takes back with a reason: its owners
// lose it, its keys are retired, what waits for review in it is rejected, and it says why; without
// a reason it stays 409.
func TestReservedNamesAndTakingOneBack(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{reservedNamespaces: []string{"initech"}})
	admin, u := b.adminAndUser()
	// Near variants of the product's words are reserved too; the operator's names as written.
	for _, name := range []string{"barrage", "official", "admin", "api", "plugins", "v1", "initech",
		"barrage-official", "official-plugins", "barrage-load", "acme-verified"} {
		p := requireProblem(t, b.do("POST", "/v1/namespaces", u.access, map[string]any{"name": name}), http.StatusConflict)
		require.Contains(t, p["detail"], "is reserved for the service")
	}
	r := b.do("POST", "/v1/admin/namespaces", admin.access, map[string]any{"name": "official"})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)

	// A squatter claims a vendor's name and registers a key.
	require.Equal(t, http.StatusCreated, b.do("POST", "/v1/namespaces", u.access, map[string]any{"name": "acme-vendor"}).status)
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, b.do("POST", "/v1/namespaces/acme-vendor/keys", u.access,
		map[string]any{"public_key": registry.PublicKey(pub).String(), "proof": registry.ProveKey(priv, "acme-vendor")}).status)
	squatted := randomData(priv, "1.0.0")
	squatted.ns = "acme-vendor"
	require.Equal(t, http.StatusCreated, b.publish(u.access, squatted).status)
	p := requireProblem(t, b.do("POST", "/v1/admin/namespaces", admin.access, map[string]any{"name": "acme-vendor"}), http.StatusConflict)
	require.Contains(t, p["detail"], "is taken")
	requireField(t, requireProblem(t, b.do("POST", "/v1/admin/namespaces", admin.access, map[string]any{"name": "acme-vendor", "reason": "bad\nline"}),
		http.StatusUnprocessableEntity), "reason")

	r = b.do("POST", "/v1/admin/namespaces", admin.access, map[string]any{"name": "acme-vendor", "reason": "the name of a vendor who did not claim it"})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	ns := r.json(t)
	require.Equal(t, true, ns["reserved"])
	require.Equal(t, "the name of a vendor who did not claim it", ns["reserved_reason"])
	require.Equal(t, []any{admin.id}, ns["owners"])
	require.NotNil(t, ns["keys"].([]any)[0].(map[string]any)["retired_at"], "the squatter's key signs nothing more")
	require.Empty(t, b.do("GET", "/v1/namespaces", u.access, nil).json(t)["items"], "the squatter owns it no more")
	queue := b.do("GET", "/v1/admin/plugin-versions", admin.access, nil)
	require.Equal(t, http.StatusOK, queue.status, "%s", queue.body)
	require.Empty(t, queue.json(t)["items"], "nothing of it waits for review")
	v := b.do("GET", "/v1/plugins/acme-vendor/random-data/versions/1.0.0", admin.access, nil).json(t)
	require.Equal(t, "rejected", v["state"])
	require.Equal(t, "the namespace was taken back: the name of a vendor who did not claim it", v["state_reason"])
	require.Len(t, b.blobSums(), 2)
	swept, err := b.mkt.SweepBlobs(t.Context(), time.Now().Add(time.Minute))
	require.NoError(t, err)
	require.Equal(t, 2, swept, "a rejected version's artifacts are not kept")
	require.Empty(t, b.blobSums())
	require.Contains(t, requireProblem(t, b.do("POST", "/v1/admin/namespaces", admin.access,
		map[string]any{"name": "acme-vendor", "reason": "again"}), http.StatusConflict)["detail"], "reserved already")
}

// Admins list the namespaces they reserved, by name, with owners, keys and the reason of one
// taken back; a name a user claimed is not among them until an admin takes it back.
func TestAdminsListTheNamespacesTheyReserved(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, u := b.adminAndUser()
	list := func() []any {
		t.Helper()
		r := b.do("GET", "/v1/admin/namespaces", admin.access, nil)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		return r.json(t)["items"].([]any)
	}
	require.Empty(t, list(), "none yet: the reserved words are no namespaces")

	for _, name := range []string{"official", "initech"} {
		require.Equal(t, http.StatusCreated, b.do("POST", "/v1/admin/namespaces", admin.access, map[string]any{"name": name}).status)
	}
	// A user claims one and registers a key on it.
	require.Equal(t, http.StatusCreated, b.do("POST", "/v1/namespaces", u.access, map[string]any{"name": "acme-vendor"}).status)
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	key := registry.PublicKey(pub)
	require.Equal(t, http.StatusCreated, b.do("POST", "/v1/namespaces/acme-vendor/keys", u.access,
		map[string]any{"public_key": key.String(), "proof": registry.ProveKey(priv, "acme-vendor")}).status)

	names := func(items []any) []string {
		var out []string
		for _, it := range items {
			out = append(out, it.(map[string]any)["name"].(string))
		}
		return out
	}
	items := list()
	require.Equal(t, []string{"initech", "official"}, names(items), "by name, and not the user's")
	for _, it := range items {
		ns := it.(map[string]any)
		require.Equal(t, true, ns["reserved"])
		require.Equal(t, []any{admin.id}, ns["owners"], "the admin who reserved it")
		require.Equal(t, []any{}, ns["keys"])
		require.NotContains(t, ns, "reserved_reason")
	}

	require.Equal(t, http.StatusCreated, b.do("POST", "/v1/admin/namespaces", admin.access,
		map[string]any{"name": "acme-vendor", "reason": "a vendor's name, squatted"}).status)
	items = list()
	require.Equal(t, []string{"acme-vendor", "initech", "official"}, names(items))
	taken := items[0].(map[string]any)
	require.Equal(t, "a vendor's name, squatted", taken["reserved_reason"])
	require.Equal(t, []any{admin.id}, taken["owners"])
	keys := taken["keys"].([]any)
	require.Len(t, keys, 1)
	require.Equal(t, key.ID(), keys[0].(map[string]any)["id"])
	require.NotNil(t, keys[0].(map[string]any)["retired_at"], "the squatter's key, retired")

	requireProblem(t, b.do("GET", "/v1/admin/namespaces", u.access, nil), http.StatusForbidden)
}
