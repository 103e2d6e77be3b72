package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/control/targets"
	"github.com/barrage-load/barrage/internal/controltest"
)

// withTargets is a server whose ownership check may reach loopback, where the tests' targets
// listen, with no open target, and maxVUs at one proved address (0: no cap).
func withTargets(t *testing.T, maxVUs int) *testBundle {
	return setup(t, setupOpts{targets: &targets.Config{Checker: controltest.LoopbackChecker(), MaxVUsPerAddress: maxVUs}})
}

func TestTargetsAreRegisteredVerifiedAndScopedToTheirOwner(t *testing.T) {
	t.Parallel()
	b := withTargets(t, 0)
	admin, u := b.adminAndUser()
	shop := controltest.NewProofServer(t)

	for _, bad := range []string{"ftp://shop.example", "https://shop.example/path", "https://user:pw@shop.example", "shop.example", "http://shop.example:70000", "http://:80"} {
		p := requireProblem(t, b.do("POST", "/v1/targets", u.access, map[string]any{"url": bad}), http.StatusUnprocessableEntity)
		requireField(t, p, "url")
	}
	r := b.do("POST", "/v1/targets", u.access, map[string]any{"url": shop.URL + "/"})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	tg := r.json(t)
	id, token := tg["id"].(string), tg["token"].(string)
	require.Equal(t, shop.URL, tg["url"])
	require.Equal(t, shop.URL+"/barrage-verify-"+token+".txt", tg["verify_url"])
	require.Equal(t, false, tg["verified"])
	require.Nil(t, tg["address"], "not proved yet")
	requireProblem(t, b.do("POST", "/v1/targets", u.access, map[string]any{"url": shop.URL}), http.StatusConflict)

	// Another account registering the same host gets its own token, and sees nothing of the
	// first one's target.
	r = b.do("POST", "/v1/targets", admin.access, map[string]any{"url": shop.URL})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	theirToken := r.json(t)["token"].(string)
	require.NotEqual(t, token, theirToken)
	requireProblem(t, b.do("GET", "/v1/targets/"+id, admin.access, nil), http.StatusNotFound)
	requireProblem(t, b.do("POST", "/v1/targets/"+id+"/verify", admin.access, nil), http.StatusNotFound)
	requireProblem(t, b.do("DELETE", "/v1/targets/"+id, admin.access, nil), http.StatusNotFound)

	// The check fails until the target serves this account's token; the other one's does not do.
	shop.Serve(theirToken, true)
	checked := b.do("POST", "/v1/targets/"+id+"/verify", u.access, nil).json(t)
	require.Equal(t, false, checked["verified"])
	require.Contains(t, checked["check_error"], "answered 404")
	require.NotEmpty(t, checked["checked_at"])
	shop.Serve(token, true)
	checked = b.do("POST", "/v1/targets/"+id+"/verify", u.access, nil).json(t)
	require.Equal(t, true, checked["verified"], "%v", checked)
	require.Equal(t, "127.0.0.1", checked["address"], "the address that served the proof")
	require.Empty(t, checked["check_error"])
	list := b.do("GET", "/v1/targets", u.access, nil).json(t)["targets"].([]any)
	require.Len(t, list, 1)
	require.Equal(t, true, list[0].(map[string]any)["verified"])

	// A target that stops serving its token is no longer verified at its next check.
	shop.Serve(token, false)
	checked = b.do("POST", "/v1/targets/"+id+"/verify", u.access, nil).json(t)
	require.Equal(t, false, checked["verified"])
	require.Nil(t, checked["verified_at"])
	require.Nil(t, checked["address"])

	require.Equal(t, http.StatusNoContent, b.do("DELETE", "/v1/targets/"+id, u.access, nil).status)
	requireProblem(t, b.do("GET", "/v1/targets/"+id, u.access, nil), http.StatusNotFound)
}

// Checks are requests the server sends on a user's word: they are throttled per account.
func TestTargetChecksAreThrottled(t *testing.T) {
	t.Parallel()
	b := withTargets(t, 0)
	_, u := b.adminAndUser()
	r := b.do("POST", "/v1/targets", u.access, map[string]any{"url": "http://127.0.0.1:9"})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	id := r.json(t)["id"].(string)
	for range targets.VerifyRate.N {
		require.Equal(t, http.StatusOK, b.do("POST", "/v1/targets/"+id+"/verify", u.access, nil).status)
	}
	r = b.do("POST", "/v1/targets/"+id+"/verify", u.access, nil)
	requireProblem(t, r, http.StatusTooManyRequests)
	require.NotEmpty(t, r.header.Get("Retry-After"))
}

// A run on a shared agent loads only targets its owner proved control of, checked again at its
// start: refused before any agent is asked otherwise, and handed to the agent with its
// destinations when admitted. Runs on private agents follow their operator's allow-list alone.
func TestARunOnASharedAgentLoadsOnlyVerifiedTargets(t *testing.T) {
	t.Parallel()
	b := withTargets(t, 0)
	admin, u := b.adminAndUser()
	sharedID, sharedToken := b.registerAgent("/v1/admin/agents", admin.access, "shared", nil)
	ownID, ownToken := b.registerAgent("/v1/agents", u.access, "mine", nil)
	for _, token := range []string{sharedToken, ownToken} {
		require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", token, hello).status)
	}
	shop := controltest.NewProofServer(t)
	script := b.addScript(u, strings.ReplaceAll(smokeScript, "http://127.0.0.1:9/", shop.URL+"/"))
	dest := strings.TrimPrefix(shop.URL, "http://")
	start := func(agent string) response {
		return b.do("POST", "/v1/runs", u.access, map[string]any{"script_id": script, "agent_ids": []string{agent}, "duration_seconds": 1})
	}

	p := requireProblem(t, start(sharedID), http.StatusUnprocessableEntity)
	require.Contains(t, requireField(t, p, "targets"), dest+" is not a target of the project")

	r := b.do("POST", "/v1/targets", u.access, map[string]any{"url": shop.URL})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	token := r.json(t)["token"].(string)
	p = requireProblem(t, start(sharedID), http.StatusUnprocessableEntity)
	require.Contains(t, requireField(t, p, "targets"), dest+" is not verified", "registered is not proved: nothing is checked at the start of a run until it is")

	shop.Serve(token, true)
	id := b.do("GET", "/v1/targets", u.access, nil).json(t)["targets"].([]any)[0].(map[string]any)["id"].(string)
	require.Equal(t, true, b.do("POST", "/v1/targets/"+id+"/verify", u.access, nil).json(t)["verified"])
	r = start(sharedID)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	job := b.do("POST", "/v1/agent/lease", sharedToken, hello).json(t)["shard"].(map[string]any)
	require.Equal(t, []any{dest + "@127.0.0.1"}, job["destinations"], "the shared agent is told the only destination it may load, at the address that proved it")
	end := b.do("POST", "/v1/agent/shards/"+job["shard_id"].(string)+"/report", sharedToken,
		map[string]any{"lease": job["lease"], "seconds": []any{}, "end": map[string]any{"reason": "finished"}})
	require.Equal(t, http.StatusOK, end.status, "body: %s", end.body)

	// An agent too old to hold a run to its destinations is not given one.
	r = start(sharedID)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	old := map[string]any{"protocol": 6, "version": "old", "cores": 2, "wait_seconds": 0}
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", sharedToken, old).status)
	run := b.do("GET", "/v1/runs/"+r.json(t)["id"].(string), u.access, nil).json(t)
	require.Contains(t, run["shards"].([]any)[0].(map[string]any)["reason"], "cannot hold a run to its owner's verified targets")

	// The target stops serving its token: the next run's start finds it out.
	shop.Serve(token, false)
	p = requireProblem(t, start(sharedID), http.StatusUnprocessableEntity)
	require.Contains(t, requireField(t, p, "targets"), "answered 404")

	// A private agent needs no proof: its operator's allow-list bounds it.
	r = start(ownID)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	job = b.do("POST", "/v1/agent/lease", ownToken, hello).json(t)["shard"].(map[string]any)
	require.NotContains(t, job, "destinations")

	// Names pointed elsewhere, or a proxy, would dial other than the proved address: only on
	// one's own agents.
	for field, line := range map[string]string{"hosts": "hosts: { shop.test: 127.0.0.5 }\n", "proxy": "proxy: http://127.0.0.1:3128\n"} {
		other := b.addScript(u, line+strings.ReplaceAll(smokeScript, "http://127.0.0.1:9/", shop.URL+"/"))
		p = requireProblem(t, b.do("POST", "/v1/runs", u.access, map[string]any{"script_id": other, "agent_ids": []string{sharedID}, "duration_seconds": 1}),
			http.StatusUnprocessableEntity)
		require.Contains(t, requireField(t, p, field), "for your own agents")
	}
}

// Every user's runs on shared agents together aim at most the cap of VUs at one address that
// proved control: two accounts that both proved the same host share it, and a run that would
// pass it is refused on vus, saying how many are aimed there already.
func TestTheLoadAtOneAddressIsCappedAcrossUsers(t *testing.T) {
	t.Parallel()
	b := withTargets(t, 10)
	admin, u := b.adminAndUser()
	shop := controltest.NewProofServer(t)
	prove := func(who user) {
		r := b.do("POST", "/v1/targets", who.access, map[string]any{"url": shop.URL})
		require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
		shop.Serve(r.json(t)["token"].(string), true)
		require.Equal(t, true, b.do("POST", "/v1/targets/"+r.json(t)["id"].(string)+"/verify", who.access, nil).json(t)["verified"])
	}
	prove(admin)
	prove(u)
	var agents []string
	for _, name := range []string{"one", "two", "three"} {
		id, token := b.registerAgent("/v1/admin/agents", admin.access, name, nil)
		require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", token, hello).status)
		agents = append(agents, id)
	}
	src := strings.ReplaceAll(smokeScript, "http://127.0.0.1:9/", shop.URL+"/")
	start := func(who user, agent string, vus int) response {
		return b.do("POST", "/v1/runs", who.access, map[string]any{"script_id": b.addScript(who, src), "agent_ids": []string{agent},
			"vus": vus, "duration_seconds": 5})
	}
	r := start(admin, agents[0], 6)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	p := requireProblem(t, start(u, agents[1], 5), http.StatusUnprocessableEntity)
	require.Contains(t, requireField(t, p, "vus"), "aim 6 VUs at 127.0.0.1 already; with this run's 5 they would pass the 10")
	r = start(u, agents[1], 4)
	require.Equal(t, http.StatusCreated, r.status, "up to the cap: %s", r.body)

	// A run that ended frees its share.
	require.Equal(t, http.StatusOK, b.do("POST", "/v1/runs/"+r.json(t)["id"].(string)+"/cancel", u.access, nil).status)
	r = start(u, agents[2], 4)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
}

// Admins read what the operator lets runs on shared agents load: the open targets, sorted,
// whether every one is open, and the cap at one proved address.
func TestAdminsReadTheTargetSettings(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{targets: &targets.Config{
		Open:             map[string]bool{"shop.example:443": true, "127.0.0.1:8081": true, "[::1]:8081": true},
		MaxVUsPerAddress: 250,
	}})
	admin, u := b.adminAndUser()
	r := b.do("GET", "/v1/admin/targets", admin.access, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.JSONEq(t, `{"open": ["127.0.0.1:8081", "[::1]:8081", "shop.example:443"], "open_all": false, "max_vus_per_address": 250}`, string(r.body))
	requireProblem(t, b.do("GET", "/v1/admin/targets", u.access, nil), http.StatusForbidden)

	// Every target open, and no cap: an empty list, not null.
	b = setup(t, setupOpts{targets: &targets.Config{All: true}})
	admin = b.firstAdmin()
	r = b.do("GET", "/v1/admin/targets", admin.access, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.JSONEq(t, `{"open": [], "open_all": true, "max_vus_per_address": 0}`, string(r.body))
}
