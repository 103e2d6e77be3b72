package httpapi_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/registry"
)

// marketTest uses a marketplace plugin by its namespaced name.
const marketTest = `version: 1
name: with a marketplace plugin
plugins:
  - { use: NS/random-data@1.0.0, as: rnd, kind: session-element }
session:
  groups:
    - name: home
      requests:
        - { name: home, url: "http://127.0.0.1:9/?e=${rnd.email}" }
load: { vus: 1, duration: 2s }
`

// generateAs plays an agent (token) that answers the next generate job, pinning the plugins
// the job carries as answer makes of them; it returns the job's plugins.
func (b *testBundle) generateAs(token string, answer func(plugins []any) []any) <-chan []any {
	out := make(chan []any, 1)
	go func() {
		defer close(out)
		w := b.do("POST", "/v1/agent/lease", token, map[string]any{"protocol": protocol, "version": "test", "cores": 2, "wait_seconds": 5})
		var work struct{ Jobs []map[string]any }
		if err := json.Unmarshal(w.body, &work); err != nil || len(work.Jobs) != 1 {
			b.t.Errorf("want one job: %d %s", w.status, w.body)
			return
		}
		job := work.Jobs[0]
		src, _ := base64.StdEncoding.DecodeString(job["test"].(map[string]any)["source"].(string))
		plugins, _ := job["plugins"].([]any)
		var doc map[string]any
		if err := json.Unmarshal([]byte(jsonOf(b.t.(*testing.T), string(src))), &doc); err != nil {
			b.t.Error(err)
		}
		gen, _ := json.Marshal(doc)
		b.do("POST", "/v1/agent/jobs/"+job["id"].(string), token, map[string]any{"generated": map[string]any{"source": string(gen), "plugins": answer(plugins)}})
		out <- plugins
	}()
	return out
}

func honest(plugins []any) []any { return plugins }

// A tester's test names an approved marketplace plugin: the server resolves it for them and
// hands it to the agent with the job, the script pins it by its signed SHA256SUMS, the agent
// fetches its artifact by digest, each run counts, a deprecated version warns in the run, and a
// revoked one refuses new runs while the runs before it keep their manifest. A shared agent
// without the kernel sandbox runs only plugins that admins published.
func TestMarketplacePluginsArePinnedFetchedAndCountedByRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, author := b.adminAndUser()
	tester := b.signup(b.invite(admin, map[string]any{"license": map[string]any{"template": "demo"}}), "tester@example.com")
	key := b.author(author, "acme")
	rd := randomData(key, "1.0.0")
	require.Equal(t, http.StatusCreated, b.publish(author.access, rd).status)

	src := strings.Replace(marketTest, "NS/", "acme/", 1)
	r := b.do("POST", "/v1/tests", tester.access, src, "Content-Type", "application/yaml")
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	testID := r.json(t)["id"].(string)
	agentID, token := b.registerAgent("/v1/agents", tester.access, "mine", nil)
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", token, hello).status)

	// Pending: not the tester's to use; the agent is given nothing.
	p := requireProblem(t, b.do("POST", "/v1/tests/"+testID+"/scripts", tester.access, nil), http.StatusUnprocessableEntity)
	require.Contains(t, requireField(t, p, "plugins.rnd"), "acme/random-data@1.0.0 is not a version of the marketplace that you may use")
	require.Equal(t, http.StatusOK, b.do("POST", "/v1/admin/plugins/acme/random-data/versions/1.0.0/approve", admin.access, nil).status)

	// An agent that pins the plugin otherwise than the marketplace has it is refused.
	job := b.generateAs(token, func(plugins []any) []any {
		pin := plugins[0].(map[string]any)
		pin["shasums"] = strings.Replace(pin["shasums"].(string), "a", "b", 1)
		return plugins
	})
	p = requireProblem(t, b.do("POST", "/v1/tests/"+testID+"/scripts", tester.access, nil), http.StatusUnprocessableEntity)
	<-job
	require.Contains(t, requireField(t, p, "plugins.rnd"), "did not pin acme/random-data@1.0.0 as the marketplace has it")

	// The job carries the resolved pin; the script keeps it.
	job = b.generateAs(token, honest)
	r = b.do("POST", "/v1/tests/"+testID+"/scripts", tester.access, nil)
	plugins := <-job
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	require.Len(t, plugins, 1)
	pin := plugins[0].(map[string]any)
	shasums := pin["shasums"].(string)
	sum := sha256.Sum256([]byte(shasums))
	require.Equal(t, map[string]any{"alias": "rnd", "name": "acme/random-data", "version": "1.0.0", "kind": "session-element",
		"sha256": hex.EncodeToString(sum[:]), "source": "marketplace", "signer": registry.PublicKey(key.Public().(ed25519.PublicKey)).String(),
		"signer_id": registry.PublicKey(key.Public().(ed25519.PublicKey)).ID(), "shasums": shasums, "signature": pin["signature"]}, pin)
	sig, err := base64.StdEncoding.DecodeString(pin["signature"].(string))
	require.NoError(t, err)
	_, err = registry.Verify([]registry.PublicKey{registry.PublicKey(key.Public().(ed25519.PublicKey))}, []byte(shasums), sig)
	require.NoError(t, err, "the pin carries what the agent verifies")
	script := r.json(t)
	require.Equal(t, []any{pin}, script["plugins"])
	scriptID := script["id"].(string)

	// A range is resolved by the server to the newest published version it matches, which the
	// agent must pin in the script it makes.
	newTest := func(use string) string {
		r := b.do("POST", "/v1/tests", tester.access, strings.Replace(marketTest, "NS/random-data@1.0.0", use, 1), "Content-Type", "application/yaml")
		require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
		return r.json(t)["id"].(string)
	}
	ranged := newTest("acme/random-data@^1.0")
	job = b.generateAs(token, honest) // leaves the range in the script
	p = requireProblem(t, b.do("POST", "/v1/tests/"+ranged+"/scripts", tester.access, nil), http.StatusUnprocessableEntity)
	require.Equal(t, []any{pin}, <-job, "the job pins the range to 1.0.0")
	require.Contains(t, requireField(t, p, "plugins.rnd"), "did not pin acme/random-data@^1.0")
	p = requireProblem(t, b.do("POST", "/v1/tests/"+newTest("acme/random-data@^2")+"/scripts", tester.access, nil), http.StatusUnprocessableEntity)
	require.Equal(t, "acme/random-data@^2: no published version that you may use matches ^2", requireField(t, p, "plugins.rnd"))

	// The agent fetches the artifact by the digest on its line; nobody else does.
	amd64 := sha256.Sum256(rd.artifacts[0].data)
	require.Contains(t, shasums, hex.EncodeToString(amd64[:])+"  random-data_1.0.0_linux_amd64\n")
	art := "/v1/agent/artifacts/" + hex.EncodeToString(amd64[:])
	f := b.do("GET", art, token, nil)
	require.Equal(t, http.StatusOK, f.status, "body: %s", f.body)
	require.Equal(t, rd.artifacts[0].data, f.body)
	requireProblem(t, b.do("GET", art, tester.access, nil), http.StatusUnauthorized)
	requireProblem(t, b.do("GET", "/v1/agent/artifacts/"+strings.Repeat("0", 64), token, nil), http.StatusNotFound)
	requireProblem(t, b.do("GET", "/v1/agent/artifacts/not-a-digest", token, nil), http.StatusBadRequest)

	// Runs: each counts; a deprecated version warns in the run's manifest.
	run := func(agent string) response {
		return b.do("POST", "/v1/runs", tester.access, map[string]any{"script_id": scriptID, "agent_ids": []string{agent}})
	}
	cancel := func(r response) {
		require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
		id := r.json(t)["id"].(string)
		require.Equal(t, http.StatusOK, b.do("POST", "/v1/runs/"+id+"/cancel", tester.access, nil).status)
	}
	first := run(agentID)
	require.Equal(t, http.StatusCreated, first.status, "body: %s", first.body)
	firstManifest := first.json(t)["manifest"].(map[string]any)
	require.Equal(t, []any{pin}, firstManifest["plugins"])
	require.NotContains(t, firstManifest, "warnings")
	cancel(first)
	require.Equal(t, http.StatusOK, b.do("POST", "/v1/plugins/acme/random-data/versions/1.0.0/deprecate", author.access, map[string]any{"reason": "use 2.0.0"}).status)
	second := run(agentID)
	require.Equal(t, http.StatusCreated, second.status, "body: %s", second.body)
	require.Equal(t, []any{"plugin acme/random-data@1.0.0 is deprecated: use 2.0.0"}, second.json(t)["manifest"].(map[string]any)["warnings"])
	cancel(second)
	v := b.do("GET", "/v1/plugins/acme/random-data/versions/1.0.0", tester.access, nil).json(t)
	require.EqualValues(t, 2, v["runs"])
	require.EqualValues(t, 2, b.do("GET", "/v1/plugins?q=random", tester.access, nil).json(t)["items"].([]any)[0].(map[string]any)["runs"], "the plugin counts its versions' runs")

	// A shared agent without the kernel sandbox refuses a plugin a user published; with it, or
	// for a plugin an admin published, it runs.
	sharedID, sharedToken := b.registerAgent("/v1/admin/agents", admin.access, "shared", nil)
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", sharedToken, hello).status)
	p = requireProblem(t, run(sharedID), http.StatusUnprocessableEntity)
	require.Contains(t, requireField(t, p, "agent_ids[0]"), "only inside the kernel sandbox")
	sandboxed := map[string]any{"protocol": protocol, "version": "test", "cores": 2, "wait_seconds": 0, "sandbox": true}
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", sharedToken, sandboxed).status)
	agent := b.do("GET", "/v1/agents/"+sharedID, admin.access, nil).json(t)
	require.Equal(t, true, agent["sandbox"], "admins see whether it holds the sandbox")
	require.EqualValues(t, protocol, agent["protocol"])
	cancel(run(sharedID))
	// Admitted while the agent held the sandbox, the run is checked again when the agent takes
	// its shard without it: the shard fails, naming the plugin, and the agent is given nothing.
	r = run(sharedID)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	runID := r.json(t)["id"].(string)
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", sharedToken, hello).status)
	ended := b.do("GET", "/v1/runs/"+runID, tester.access, nil).json(t)
	require.Equal(t, "failed", ended["state"])
	shard := ended["shards"].([]any)[0].(map[string]any)
	require.Equal(t, "failed", shard["state"])
	require.Contains(t, shard["reason"], `shared agent "shared" does not hold the kernel sandbox now, and acme/random-data@1.0.0, published by a user`)

	adminKey := b.author(admin, "core")
	core := randomData(adminKey, "1.0.0")
	core.ns = "core"
	for i, a := range core.artifacts {
		core.artifacts[i].data = tinyELF(a.arch, "core's build")
	}
	require.Equal(t, http.StatusCreated, b.publish(admin.access, core).status)
	require.Equal(t, http.StatusOK, b.do("POST", "/v1/admin/plugins/core/random-data/versions/1.0.0/approve", admin.access, nil).status)
	r = b.do("POST", "/v1/tests", tester.access, strings.Replace(marketTest, "NS/", "core/", 1), "Content-Type", "application/yaml")
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", sharedToken, hello).status, "the sandbox is gone")
	job = b.generateAs(sharedToken, honest)
	r = b.do("POST", "/v1/tests/"+r.json(t)["id"].(string)+"/scripts", tester.access, map[string]any{"agent_id": sharedID})
	<-job
	require.Equal(t, http.StatusCreated, r.status, "an admin's plugin on a shared agent: %s", r.body)
	cancel(b.do("POST", "/v1/runs", tester.access, map[string]any{"script_id": r.json(t)["id"], "agent_ids": []string{sharedID}}))

	// A namespace the marketplace does not have is not an agent's plugin: it is refused.
	p = requireProblem(t, b.do("POST", "/v1/tests/"+newTest("ghost/random-data@1.0.0")+"/scripts", tester.access, nil), http.StatusUnprocessableEntity)
	require.Contains(t, requireField(t, p, "plugins.rnd"), "(it has no namespace ghost); a plugin of an agent's own directory is named without a namespace")
	// A pending version is rejected, not revoked: revoked ones are shown to everyone.
	require.Equal(t, http.StatusCreated, b.publish(author.access, randomData(key, "2.0.0")).status)
	p = requireProblem(t, b.do("POST", "/v1/admin/plugins/acme/random-data/versions/2.0.0/revoke", admin.access, map[string]any{"reason": "x"}), http.StatusConflict)
	require.Contains(t, p["detail"], "is pending: reject it")

	// Revoked: no new run, no fetch; the runs before keep their manifest.
	require.Equal(t, http.StatusOK, b.do("POST", "/v1/admin/plugins/acme/random-data/versions/1.0.0/revoke", admin.access, map[string]any{"reason": "leaks data"}).status)
	p = requireProblem(t, run(agentID), http.StatusUnprocessableEntity)
	require.Equal(t, "acme/random-data@1.0.0 was revoked (leaks data): no new run may use it", requireField(t, p, "plugins.rnd"))
	requireProblem(t, b.do("GET", art, token, nil), http.StatusGone)
	before := b.do("GET", "/v1/runs/"+first.json(t)["id"].(string), tester.access, nil)
	require.Equal(t, http.StatusOK, before.status)
	require.Equal(t, firstManifest["plugins"], before.json(t)["manifest"].(map[string]any)["plugins"])
	require.EqualValues(t, 4, b.do("GET", "/v1/plugins/acme/random-data/versions/1.0.0", tester.access, nil).json(t)["runs"], "every run admitted counts")
	// A range whose only match was revoked says so, and why.
	p = requireProblem(t, b.do("POST", "/v1/tests/"+ranged+"/scripts", tester.access, nil), http.StatusUnprocessableEntity)
	require.Equal(t, "acme/random-data@^1.0: no published version that you may use matches ^1.0: revoked, 1.0.0 (leaks data)", requireField(t, p, "plugins.rnd"))
}
