package market_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/barrage-load/barrage/internal/e2etest"
	"github.com/stretchr/testify/require"
)

// TestATestWithPluginsIsDebuggedGeneratedAndRunOnAgents drives the quick start's second half
// with real processes: a test pushed with its data file, debugged on an agent, generated into
// a script there (its source plugin run, its element plugin pinned by digest), and run from the
// test; an agent whose copy of the plugin differs from the pin refuses the shard, naming it.
func TestATestWithPluginsIsDebuggedGeneratedAndRunOnAgents(t *testing.T) {
	t.Parallel()
	bin := e2etest.BuildPlugins(t, "random-data", "inject-headers")
	var mu sync.Mutex
	var seen []*http.Request
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Clone(r.Context()))
		mu.Unlock()
		fmt.Fprint(w, `{"ok":true}`)
	}))
	defer target.Close()
	requests := func() []*http.Request {
		mu.Lock()
		defer mu.Unlock()
		return append([]*http.Request(nil), seen...)
	}

	p := e2etest.StartServe(t, e2etest.ReachableDir(t), nil)
	cfg := t.TempDir()
	e2etest.SignUpFirstAdmin(t, p, cfg, "ada@example.com", "Ada")

	// Two agents with their own plugin directories: the second's random-data is not the
	// binary the first has.
	good := filepath.Join(t.TempDir(), "plugins")
	for _, n := range []string{"random-data", "inject-headers"} {
		_, errOut, code := e2etest.RunWithEnv(t, []string{"BARRAGE_PLUGIN_DIR=" + good}, "plugin", "add", filepath.Join(bin, n))
		require.Zero(t, code, errOut)
	}
	bad := filepath.Join(t.TempDir(), "plugins")
	_, errOut, exit := e2etest.RunWithEnv(t, []string{"BARRAGE_PLUGIN_DIR=" + bad}, "plugin", "add", filepath.Join(bin, "random-data"))
	require.Zero(t, exit, errOut)
	manifest := filepath.Join(bad, "random-data", "1.0.0", "plugin.json")
	m, err := os.ReadFile(manifest)
	require.NoError(t, err)
	m = regexp.MustCompile(`"sha256":\s*"[0-9a-f]{64}"`).ReplaceAll(m, []byte(`"sha256": "`+strings.Repeat("0", 64)+`"`))
	require.NoError(t, os.WriteFile(manifest, m, 0o644))

	goodToken := strings.TrimSpace(e2etest.MustCLI(t, p, cfg, "", "agents", "create", "good"))
	badToken := strings.TrimSpace(e2etest.MustCLI(t, p, cfg, "", "agents", "create", "stale"))
	e2etest.StartAgent(t, p, goodToken, "BARRAGE_PLUGIN_DIR="+good)
	e2etest.StartAgent(t, p, badToken, "BARRAGE_PLUGIN_DIR="+bad)
	e2etest.Eventually(t, 30*time.Second, "both agents online", func() bool {
		return strings.Count(e2etest.MustCLI(t, p, cfg, "", "agents", "list"), " online ") == 2
	})
	agentID := func(name string) string {
		m := regexp.MustCompile(`(?m)^([0-9a-f-]{36})\s+` + name + `\s`).FindStringSubmatch(e2etest.MustCLI(t, p, cfg, "", "agents", "list"))
		require.NotNil(t, m, name)
		return m[1]
	}

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "users.csv"), []byte("user\nann\nbob\n"), 0o644))
	path := filepath.Join(dir, "signup.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`version: 1
name: sign-up
base_url: `+target.URL+`
variables:
  data:
    - { file: users.csv }
plugins:
  - { use: random-data@1.0.0, as: rnd, kind: session-element, config: { email: { syntax: email, domain: example.test } } }
  - { use: inject-headers@1.0.0, as: inject, kind: source-modifier, config: { headers: { X-Env: staging } } }
session:
  groups:
    - name: sign up
      requests:
        - { name: sign up, url: "/signup?user=${user}&email=${rnd.email}", assert: [ { status: 200 } ] }
load:
  vus: 2
  duration: 2s
`), 0o644))

	id := strings.TrimSpace(e2etest.MustCLI(t, p, cfg, "", "tests", "push", path))
	require.Contains(t, e2etest.MustCLI(t, p, cfg, "", "tests", "list"), "sign-up")

	// Debug: one iteration on the agent, the source plugin applied, the element's values used.
	out, errOut, err := e2etest.CLI(t, p, cfg, "", "tests", "debug", id, "--agent", agentID("good"))
	require.NoError(t, err, "stdout: %s\nstderr: %s", out, errOut)
	require.Contains(t, out, "=== sign up")
	require.Contains(t, out, "> X-Env: staging")
	require.Contains(t, out, "every request passed its checks")
	require.Len(t, requests(), 1)
	require.Regexp(t, `^user=ann&email=[^@&]+@example\.test$`, requests()[0].URL.RawQuery)

	// Generate: the script pins random-data by the digest of the good agent's binary, and the
	// source plugin, having run, is gone from it.
	out, errOut, err = e2etest.CLI(t, p, cfg, "", "scripts", "generate", id, "--agent", agentID("good"))
	require.NoError(t, err, "stdout: %s\nstderr: %s", out, errOut)
	require.Regexp(t, `plugin rnd random-data@1\.0\.0 \(session-element\) sha256 [0-9a-f]{64}`, errOut)
	require.NotContains(t, errOut, "inject")
	scriptID := strings.TrimSpace(out)

	// A run of the test on the good agent: every request carries what the plugins made.
	before := len(requests())
	out, errOut, err = e2etest.CLI(t, p, cfg, "", "runs", "start", "--test", id, "--agent", agentID("good"), "--watch")
	require.NoError(t, err, "stdout: %s\nstderr: %s", out, errOut)
	got := requests()[before:]
	require.NotEmpty(t, got)
	for _, r := range got {
		require.Equal(t, "staging", r.Header.Get("X-Env"))
		require.Regexp(t, `email=[^@&]+@example\.test$`, r.URL.RawQuery)
	}
	// The test's runs are listed by test, with their script's name, load and outcome.
	runID := regexp.MustCompile(`(?m)^([0-9a-f-]{36})$`).FindStringSubmatch(out)[1]
	listed := e2etest.MustCLI(t, p, cfg, "", "runs", "list", "--test", id, "--state", "finished")
	require.Regexp(t, `(?m)^ID +STATE +SCRIPT +LOAD +AGENTS +CREATED +REQUESTS +ERRORS +P95 +VERDICT$`, listed)
	require.Regexp(t, `(?m)^`+runID+` +finished +\S+ +\d+ vus +1 +[\d-]+ [\d:]+ +\d+ +[\d.]+% +\S+ +ok$`, listed)
	require.Equal(t, 2, strings.Count(listed, "\n"), "the one run of the test: %s", listed)

	// The stale agent cannot generate the test (it lacks the source plugin), and the user reads
	// why; given the script pinned on the good agent, it fails the shard naming the plugin,
	// and nothing reaches the target.
	_, errOut, err = e2etest.CLI(t, p, cfg, "", "runs", "start", "--test", id, "--agent", agentID("stale"))
	require.Error(t, err)
	require.Contains(t, errOut, "plugin inject-headers@1.0.0 is not in")
	before = len(requests())
	out, errOut, err = e2etest.CLI(t, p, cfg, "", "runs", "start", "--script", scriptID, "--agent", agentID("stale"), "--watch")
	require.Error(t, err, "stdout: %s\nstderr: %s", out, errOut)
	require.Contains(t, out+errOut, "random-data@1.0.0: this agent's binary has sha256 0000")
	require.Len(t, requests(), before)
}

// TestTheDemoAgentReachesOnlyWhatItIsAllowed is `make run`'s portal: serve with the shared demo
// agent in its process, which every user may use. It debugs and runs a test against the
// address it is allowed (the demo shop's by default), and refuses, at dial time, any other
// service on the server's loopback: a user cannot read the server's neighbours through it.
func TestTheDemoAgentReachesOnlyWhatItIsAllowed(t *testing.T) {
	var shopHits, secretHits atomic.Int64
	shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		shopHits.Add(1)
		fmt.Fprint(w, `{"ok":true}`)
	}))
	defer shop.Close()
	secret := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secretHits.Add(1)
		fmt.Fprint(w, "the admin password is hunter2")
	}))
	defer secret.Close()

	p := e2etest.StartServe(t, e2etest.ReachableDir(t), nil, "BARRAGE_DEMO_AGENT=true", "BARRAGE_DEMO_AGENT_ALLOW="+strings.TrimPrefix(shop.URL, "http://"))
	cfg := t.TempDir()
	e2etest.SignUpFirstAdmin(t, p, cfg, "ada@example.com", "Ada")
	e2etest.Eventually(t, 30*time.Second, "the demo agent online", func() bool {
		return regexp.MustCompile(`(?m)\sdemo\s.*\sonline\s`).MatchString(e2etest.MustCLI(t, p, cfg, "", "agents", "list"))
	})

	dir := t.TempDir()
	push := func(name, target string) string {
		path := filepath.Join(dir, name+".yaml")
		require.NoError(t, os.WriteFile(path, []byte(`version: 1
name: `+name+`
base_url: `+target+`
session:
  groups:
    - name: home
      requests:
        - { name: home, url: /, assert: [ { status: 200 } ] }
load:
  vus: 2
  duration: 1s
`), 0o644))
		return strings.TrimSpace(e2etest.MustCLI(t, p, cfg, "", "tests", "push", path))
	}

	out, errOut, err := e2etest.CLI(t, p, cfg, "", "tests", "debug", push("shop", shop.URL))
	require.NoError(t, err, "stdout: %s\nstderr: %s", out, errOut)
	require.Contains(t, out, `{"ok":true}`)
	out, errOut, err = e2etest.CLI(t, p, cfg, "", "runs", "start", "--test", push("shop", shop.URL), "--watch")
	require.NoError(t, err, "stdout: %s\nstderr: %s", out, errOut)
	require.Contains(t, out, "finished")
	require.Greater(t, shopHits.Load(), int64(10))

	// The demo shop is open to every user (the operator allowed the demo agent that address
	// alone); anything else is a target nobody proved control of, which the server's check
	// could not reach to prove it either.
	out, errOut, _ = e2etest.CLI(t, p, cfg, "", "tests", "debug", push("secret", secret.URL))
	require.Contains(t, out+errOut, "the agent's policy refuses this destination")
	require.Contains(t, out+errOut, "is not a target the run's owner proved control of")
	require.NotContains(t, out+errOut, "hunter2")
	out, errOut, _ = e2etest.CLI(t, p, cfg, "", "runs", "start", "--test", push("secret", secret.URL), "--watch")
	require.Contains(t, out+errOut, "is not a target of the project")
	id := strings.TrimSpace(e2etest.MustCLI(t, p, cfg, "", "targets", "add", secret.URL))
	// The demo shop is open to everyone: registered, it says so and needs no proof.
	_, errOut, err = e2etest.CLI(t, p, cfg, "", "targets", "add", shop.URL)
	require.NoError(t, err)
	require.Contains(t, errOut, "opens it to every user")
	out, errOut, _ = e2etest.CLI(t, p, cfg, "", "targets", "verify", id)
	require.Contains(t, out+errOut, "--verify-allow", "the server's check reaches no internal address either")
	require.Zero(t, secretHits.Load(), "nothing reached the service the demo agent is not allowed")
}
