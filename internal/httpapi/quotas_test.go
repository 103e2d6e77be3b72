package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
)

// requireQuota requires r to be the 403 of quota, with its limit and what is in use.
func requireQuota(t *testing.T, r response, quota string, limit, used int64) {
	t.Helper()
	p := requireProblem(t, r, http.StatusForbidden)
	require.Equal(t, "urn:barrage:problem:quota-exceeded", p["type"])
	q := p["quota"].(map[string]any)
	require.Equal(t, quota, q["quota"])
	require.EqualValues(t, limit, q["limit"])
	require.EqualValues(t, used, q["used"])
	require.Contains(t, p["detail"], "quota "+quota+" exceeded")
}

// A user with a license keeps what the quotas allow: one more test, file, namespace, target or
// version past a quota is 403 naming it, its size and what is in use, and nothing is stored;
// GET /v1/me/license shows what is used of each. An unlimited user (an admin) has none.
func TestQuotasBoundWhatAUserKeeps(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{quotas: barrage.Quotas{StorageBytes: 5000, Tests: 2, Namespaces: 1, PendingVersions: 1, Targets: 1}})
	admin, u := b.adminAndUser()
	const source = "version: 1\nsession: {groups: [{name: g, requests: [{name: r, url: 'http://127.0.0.1:9/'}]}]}\nload: {vus: 1, iterations: 1}\n"
	test := func(bearer, name string) response {
		return b.do("POST", "/v1/tests?name="+name, bearer, source, "Content-Type", "application/yaml")
	}
	stored := int64(2 * len(source)) // two tests' sources
	require.Equal(t, http.StatusCreated, test(u.access, "one").status)
	second := test(u.access, "two")
	require.Equal(t, http.StatusCreated, second.status)
	requireQuota(t, test(u.access, "three"), "tests", 2, 2)
	require.Len(t, b.do("GET", "/v1/tests", u.access, nil).json(t)["items"], 2, "nothing stored")

	id := second.json(t)["id"].(string)
	requireQuota(t, b.do("PUT", "/v1/tests/"+id+"/files/users.csv", u.access, "name\n"+strings.Repeat("x", 6000)+"\n", "Content-Type", "application/octet-stream"),
		"storage_bytes", 5000, stored)
	requireProblem(t, b.do("GET", "/v1/tests/"+id+"/files/users.csv", u.access, nil), http.StatusNotFound)
	file := func(size int) response {
		return b.do("PUT", "/v1/tests/"+id+"/files/users.csv", u.access, "name\n"+strings.Repeat("y", size)+"\n", "Content-Type", "application/octet-stream")
	}
	require.Equal(t, http.StatusCreated, file(3000).status)
	require.Equal(t, http.StatusOK, file(3500).status, "a replacement adds what it holds beyond the file it replaces")
	stored += int64(len("name\n\n") + 3500)

	require.Equal(t, http.StatusCreated, b.do("POST", "/v1/namespaces", u.access, map[string]any{"name": "mine"}).status)
	requireQuota(t, b.do("POST", "/v1/namespaces", u.access, map[string]any{"name": "another"}), "namespaces", 1, 1)
	require.Equal(t, http.StatusCreated, b.do("POST", "/v1/targets", u.access, map[string]any{"url": "http://127.0.0.1:9/"}).status)
	requireQuota(t, b.do("POST", "/v1/targets", u.access, map[string]any{"url": "http://127.0.0.1:10/"}), "targets", 1, 1)

	lic := b.do("GET", "/v1/me/license", u.access, nil).json(t)
	require.Equal(t, map[string]any{
		"storage_bytes": map[string]any{"limit": 5000.0, "used": float64(stored)}, "tests": map[string]any{"limit": 2.0, "used": 2.0},
		"namespaces": map[string]any{"limit": 1.0, "used": 1.0}, "pending_versions": map[string]any{"limit": 1.0, "used": 0.0},
		"targets": map[string]any{"limit": 1.0, "used": 1.0},
	}, lic["quotas"])

	// A version waiting for review counts against pending_versions, and its artifacts' declared
	// sizes against storage, before a byte of them is taken.
	key := b.author(admin, "acme")
	require.Equal(t, http.StatusOK, b.do("PUT", "/v1/namespaces/acme/owners/"+u.id, admin.access, nil).status)
	require.Equal(t, http.StatusCreated, b.publish(u.access, randomData(key, "1.0.0")).status)
	requireQuota(t, b.publish(u.access, randomData(key, "1.1.0")), "pending_versions", 1, 1)

	// The unlimited have no quotas.
	for _, name := range []string{"a", "b", "c"} {
		require.Equal(t, http.StatusCreated, test(admin.access, name).status)
	}
	require.Nil(t, b.do("GET", "/v1/me/license", admin.access, nil).json(t)["quotas"])
}
