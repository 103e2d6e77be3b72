package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
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

// Changes that come at once are held to the quotas one after the other: of 16 namespaces claimed
// at once with room for 5, 5 are made; of 10 targets with room for 3, 3.
func TestQuotasHoldWhenChangesComeAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{quotas: barrage.Quotas{Namespaces: 5, Targets: 3}})
	_, u := b.adminAndUser()
	atOnce := func(n int, path string, body func(i int) string) map[int]int {
		statuses := make([]int, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				req, err := http.NewRequestWithContext(t.Context(), "POST", b.srv.URL+path, strings.NewReader(body(i)))
				if err != nil {
					errs[i] = err
					return
				}
				req.Header.Set("Authorization", "Bearer "+u.access)
				req.Header.Set("Content-Type", "application/json")
				res, err := b.srv.Client().Do(req)
				if err != nil {
					errs[i] = err
					return
				}
				res.Body.Close()
				statuses[i] = res.StatusCode
			})
		}
		wg.Wait()
		count := map[int]int{}
		for i := range n {
			require.NoError(t, errs[i])
			count[statuses[i]]++
		}
		return count
	}
	require.Equal(t, map[int]int{http.StatusCreated: 5, http.StatusForbidden: 11},
		atOnce(16, "/v1/namespaces", func(i int) string { return fmt.Sprintf(`{"name": "ns%d"}`, i) }))
	require.Equal(t, map[int]int{http.StatusCreated: 3, http.StatusForbidden: 7},
		atOnce(10, "/v1/targets", func(i int) string { return fmt.Sprintf(`{"url": "http://127.0.0.1:%d/"}`, 1000+i) }))
	lic := b.do("GET", "/v1/me/license", u.access, nil).json(t)["quotas"].(map[string]any)
	require.EqualValues(t, 5, lic["namespaces"].(map[string]any)["used"])
	require.EqualValues(t, 3, lic["targets"].(map[string]any)["used"])
}

// A namespace counts against the quota of the user who claimed it: being made a co-owner of
// someone else's does not spend your own.
func TestANamespaceCountsForWhoClaimedIt(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{quotas: barrage.Quotas{Namespaces: 1}})
	admin, u := b.adminAndUser()
	other := b.signup(b.invite(admin, map[string]any{"license": map[string]any{"template": "demo"}}), "other@example.com")
	require.Equal(t, http.StatusCreated, b.do("POST", "/v1/namespaces", other.access, map[string]any{"name": "theirs"}).status)
	require.Equal(t, http.StatusOK, b.do("PUT", "/v1/namespaces/theirs/owners/"+u.id, other.access, nil).status)
	require.Equal(t, http.StatusCreated, b.do("POST", "/v1/namespaces", u.access, map[string]any{"name": "mine"}).status)
	lic := b.do("GET", "/v1/me/license", u.access, nil).json(t)["quotas"].(map[string]any)
	require.EqualValues(t, 1, lic["namespaces"].(map[string]any)["used"])
}

// A license may set its own quotas over the server's: an admin sets them on a user's license or
// in an invitation's, sees what the user keeps against each, and puts one back to the server's
// default with 0. A change that frees passes even past a quota lowered since.
func TestALicenseSetsItsOwnQuotas(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{quotas: barrage.Quotas{Tests: 1, Targets: 2}})
	admin, u := b.adminAndUser()
	const source = "version: 1\nsession: {groups: [{name: g, requests: [{name: r, url: 'http://127.0.0.1:9/'}]}]}\nload: {vus: 1, iterations: 1}\n"
	test := func(name string) response {
		return b.do("POST", "/v1/tests?name="+name, u.access, source, "Content-Type", "application/yaml")
	}
	first := test("one")
	require.Equal(t, http.StatusCreated, first.status)
	requireQuota(t, test("two"), "tests", 1, 1)

	r := b.do("PATCH", "/v1/admin/users/"+u.id, admin.access, map[string]any{"license": map[string]any{"quota_limits": map[string]any{"tests": 3}}})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, map[string]any{"tests": 3.0}, r.json(t)["license"].(map[string]any)["quota_limits"])
	require.Equal(t, http.StatusCreated, test("two").status)
	require.Equal(t, http.StatusCreated, test("three").status)
	requireQuota(t, test("four"), "tests", 3, 3)
	lic := b.do("GET", "/v1/admin/users/"+u.id+"/license", admin.access, nil).json(t)
	require.Equal(t, map[string]any{"limit": 3.0, "used": 3.0}, lic["quotas"].(map[string]any)["tests"])
	require.Equal(t, map[string]any{"limit": 2.0, "used": 0.0}, lic["quotas"].(map[string]any)["targets"], "the server's default")
	requireProblem(t, b.do("GET", "/v1/admin/users/"+u.id+"/license", u.access, nil), http.StatusForbidden)

	// Back to the server's default: past it now, the user may delete but not add.
	r = b.do("PATCH", "/v1/admin/users/"+u.id, admin.access, map[string]any{"license": map[string]any{"quota_limits": map[string]any{"tests": 0}}})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Nil(t, r.json(t)["license"].(map[string]any)["quota_limits"])
	requireQuota(t, test("four"), "tests", 1, 3)
	require.Equal(t, http.StatusNoContent, b.do("DELETE", "/v1/tests/"+first.json(t)["id"].(string), u.access, nil).status)
	p := requireProblem(t, b.do("PATCH", "/v1/admin/users/"+u.id, admin.access, map[string]any{"license": map[string]any{"quota_limits": map[string]any{"tests": -1}}}),
		http.StatusUnprocessableEntity)
	require.Contains(t, requireField(t, p, "license.quota_limits.tests"), "0")

	// An invitation carries them to the license it issues.
	inv := b.do("POST", "/v1/admin/invitations", admin.access, map[string]any{"license": map[string]any{"template": "demo", "quota_limits": map[string]any{"targets": 7}}})
	require.Equal(t, http.StatusCreated, inv.status, "%s", inv.body)
	require.Equal(t, map[string]any{"targets": 7.0}, inv.json(t)["license"].(map[string]any)["quota_limits"])
	v := b.signup(secret(inv.json(t)["code"].(string)), "v@example.com")
	mine := b.do("GET", "/v1/me/license", v.access, nil).json(t)
	require.Equal(t, map[string]any{"targets": 7.0}, mine["quota_limits"])
	require.Equal(t, map[string]any{"limit": 7.0, "used": 0.0}, mine["quotas"].(map[string]any)["targets"])
}

// Generating a test's script again makes no copy: the answer is the script made before,
// and a data file's content is kept once whatever holds it. What scripts keep beyond the test's
// files as they are now (a file since replaced) counts against the storage quota.
func TestAScriptIsMadeOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{quotas: barrage.Quotas{StorageBytes: 1 << 20}})
	_, u := b.adminAndUser()
	created := b.do("POST", "/v1/tests", u.access, usersTest, "Content-Type", "application/yaml")
	require.Equal(t, http.StatusCreated, created.status, "%s", created.body)
	id := created.json(t)["id"].(string)
	file := func(fill string) {
		r := b.do("PUT", "/v1/tests/"+id+"/files/users.csv", u.access, "user\n"+strings.Repeat(fill, 10000)+"\n", "Content-Type", "application/octet-stream")
		require.Contains(t, []int{http.StatusCreated, http.StatusOK}, r.status, "%s", r.body)
	}
	used := func() int64 {
		q := b.do("GET", "/v1/me/license", u.access, nil).json(t)["quotas"].(map[string]any)
		return int64(q["storage_bytes"].(map[string]any)["used"].(float64))
	}
	file("a")
	before := used()
	first := b.do("POST", "/v1/tests/"+id+"/scripts", u.access, nil)
	require.Equal(t, http.StatusCreated, first.status, "%s", first.body)
	again := b.do("POST", "/v1/tests/"+id+"/scripts", u.access, nil)
	require.Equal(t, http.StatusCreated, again.status, "%s", again.body)
	require.Equal(t, first.json(t)["id"], again.json(t)["id"])
	require.Equal(t, first.json(t)["created_at"], again.json(t)["created_at"])
	require.Equal(t, before, used(), "a script with the test's files adds nothing")

	file("b") // replaced: the first script keeps the old content
	require.Equal(t, before+10006, used())
	second := b.do("POST", "/v1/tests/"+id+"/scripts", u.access, nil).json(t)["id"]
	require.NotEqual(t, first.json(t)["id"], second)
	require.Equal(t, second, b.do("POST", "/v1/tests/"+id+"/scripts", u.access, nil).json(t)["id"])
	var scripts, contents int
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM scripts WHERE owner_id = $1),
		(SELECT count(*) FROM file_contents WHERE owner_id = $1)`, u.id).Scan(&scripts, &contents))
	require.Equal(t, 2, scripts)
	require.Equal(t, 2, contents)
}

// Personal API tokens and private agents are bounded per user, whatever the license: past the
// bound, 422 saying so, and nothing stored.
func TestTokensAndAgentsAreBoundedPerUser(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, u := b.adminAndUser()
	for i := range barrage.MaxAPITokens {
		r := b.do("POST", "/v1/tokens", u.access, map[string]any{"name": fmt.Sprintf("t%d", i), "scopes": []string{"read"}})
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		secret(r.json(t)["token"].(string))
	}
	p := requireProblem(t, b.do("POST", "/v1/tokens", u.access, map[string]any{"name": "one more", "scopes": []string{"read"}}), http.StatusUnprocessableEntity)
	require.Contains(t, p["detail"], "you have 100 personal API tokens, the most one may keep")
	for i := range barrage.MaxPrivateAgents {
		r := b.do("POST", "/v1/agents", u.access, map[string]any{"name": fmt.Sprintf("a%d", i)})
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		secret(r.json(t)["token"].(string))
	}
	p = requireProblem(t, b.do("POST", "/v1/agents", u.access, map[string]any{"name": "one more"}), http.StatusUnprocessableEntity)
	require.Contains(t, p["detail"], "you have 50 private agents, the most one may keep")
	agents := b.do("GET", "/v1/agents", u.access, nil).json(t)["items"].([]any)
	require.Len(t, agents, barrage.MaxPrivateAgents, "nothing refused was stored")
}
