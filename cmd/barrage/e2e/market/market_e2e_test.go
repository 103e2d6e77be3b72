package market_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/barrage-load/barrage/internal/e2etest"
	"github.com/stretchr/testify/require"
)

// The marketplace as its people use it, through the binary: an author claims a namespace,
// registers the key keygen made, and publishes random-data built for linux/amd64 and
// linux/arm64 and the Python correlation-id; an admin approves them; a tester finds one,
// installs it (signature and sha256 verified) and runs a script that uses it by its
// marketplace name. A tampered artifact in storage is refused at install; a revoked version
// cannot be installed.
func TestPublishReviewFindInstallAndRunAMarketplacePlugin(t *testing.T) {
	t.Parallel()
	bin := e2etest.BuildPlugins(t, "random-data")
	arm := filepath.Join(t.TempDir(), "random-data")
	build := exec.Command("go", "build", "-trimpath", "-o", arm, "../../../../examples/plugins/random-data")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64")
	built, err := build.CombinedOutput()
	require.NoError(t, err, "%s", built)
	zipapp := filepath.Join(t.TempDir(), "correlation-id")
	built, err = exec.Command("../../../../examples/plugins/correlation-id/build.sh", zipapp).CombinedOutput()
	require.NoError(t, err, "%s", built)
	python, err := exec.Command("../../../../scripts/python-env.sh").Output()
	require.NoError(t, err)
	venv := "--plugin-path=" + filepath.Dir(filepath.Dir(strings.TrimSpace(string(python))))

	data := e2etest.ReachableDir(t)
	p := e2etest.StartServe(t, data, nil)
	admin, author, tester := t.TempDir(), t.TempDir(), t.TempDir()
	e2etest.SignUpFirstAdmin(t, p, admin, "ada@example.com", "Ada")
	for _, u := range []struct{ dir, email string }{{author, "author@example.com"}, {tester, "tester@example.com"}} {
		m := e2etest.CodeLine.FindStringSubmatch(e2etest.MustCLI(t, p, admin, "", "admin", "invite", "--template", "demo"))
		require.NotNil(t, m)
		e2etest.MustCLI(t, p, u.dir, "a long password 1\n", "signup", "--code", m[1], "--email", u.email, "--name", "U")
		e2etest.MustCLI(t, p, u.dir, "a long password 1\n", "login", "--email", u.email)
	}

	// The author's namespace and key.
	e2etest.MustCLI(t, p, author, "", "plugin", "keygen")
	require.Contains(t, e2etest.MustCLI(t, p, author, "", "namespaces", "create", "acme"), "namespace acme is yours")
	require.Contains(t, e2etest.MustCLI(t, p, author, "", "namespaces", "add-key", "acme"), "signs the versions of acme")
	// The tester cannot publish there.
	e2etest.MustCLI(t, p, tester, "", "plugin", "keygen")
	_, errOut, err := e2etest.CLI(t, p, tester, "", "namespaces", "add-key", "acme")
	require.Error(t, err)
	require.Contains(t, errOut, "404")
	// ... until the author makes them a co-owner, by the id `barrage me` shows them.
	testerID := regexp.MustCompile(`(?m)^id: (\S+)$`).FindStringSubmatch(e2etest.MustCLI(t, p, tester, "", "me"))[1]
	require.Contains(t, e2etest.MustCLI(t, p, author, "", "namespaces", "add-owner", "acme", testerID), testerID)
	require.Contains(t, e2etest.MustCLI(t, p, tester, "", "namespaces", "list"), "acme")
	require.NotContains(t, e2etest.MustCLI(t, p, author, "", "namespaces", "remove-owner", "acme", testerID), testerID)

	out := e2etest.MustCLI(t, p, author, "", "plugin", "publish", "--namespace", "acme", "--license", "MIT", "--tag", "data",
		"--readme", "../../../../examples/plugins/random-data/README.md", "--config", `{"id": {"syntax": "uuid"}}`, filepath.Join(bin, "random-data"), arm)
	require.Contains(t, out, "published acme/random-data@1.0.0, pending")
	require.Contains(t, out, "linux/amd64  random-data_1.0.0_linux_amd64")
	require.Contains(t, out, "linux/arm64  random-data_1.0.0_linux_arm64")
	out = e2etest.MustCLI(t, p, author, "", "plugin", "publish", "--namespace", "acme", venv, zipapp)
	require.Contains(t, out, "published acme/correlation-id@1.0.0, pending")
	// Once only.
	_, errOut, err = e2etest.CLI(t, p, author, "", "plugin", "publish", "--namespace", "acme", "--config", `{"id": {"syntax": "uuid"}}`, filepath.Join(bin, "random-data"))
	require.Error(t, err)
	require.Contains(t, errOut, "409")

	// Pending: the tester neither finds nor installs it.
	require.NotContains(t, e2etest.MustCLI(t, p, tester, "", "plugin", "search", "random"), "acme/random-data")
	_, errOut, err = e2etest.CLI(t, p, tester, "", "plugin", "install", "acme/random-data@1.0.0")
	require.Error(t, err)
	require.Contains(t, errOut, "404")

	queue := e2etest.MustCLI(t, p, admin, "", "admin", "plugins")
	require.Contains(t, queue, "acme/random-data@1.0.0")
	require.Contains(t, queue, "acme/correlation-id@1.0.0")
	require.Contains(t, e2etest.MustCLI(t, p, admin, "", "admin", "plugin", "approve", "acme/random-data@1.0.0"), "is published")
	require.Contains(t, e2etest.MustCLI(t, p, admin, "", "admin", "plugin", "approve", "acme/correlation-id@1.0.0"), "is published")

	found := e2etest.MustCLI(t, p, tester, "", "plugin", "search", "rand")
	require.Regexp(t, `acme/random-data\s+1\.0\.0\s+session-element`, found)
	require.Contains(t, e2etest.MustCLI(t, p, tester, "", "plugin", "search", "--kind", "url"), "acme/correlation-id")
	info := e2etest.MustCLI(t, p, tester, "", "plugin", "info", "acme/random-data")
	require.Regexp(t, `1\.0\.0\s+published\s+linux/amd64,linux/arm64`, info)
	require.Contains(t, info, "# random-data", "the README")

	installed := e2etest.MustCLI(t, p, tester, "", "plugin", "install", "acme/random-data@1.0.0")
	require.Contains(t, installed, "installed acme/random-data@1.0.0 (session-element)")
	require.Contains(t, e2etest.MustCLI(t, p, tester, "", "plugin", "list"), "acme/random-data")

	// A script uses it by its marketplace name.
	var mu sync.Mutex
	var bodies []string
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
	}))
	defer target.Close()
	script := filepath.Join(t.TempDir(), "signup.yaml")
	require.NoError(t, os.WriteFile(script, []byte(`version: 1
name: market
base_url: `+target.URL+`
plugins:
  - use: acme/random-data@^1.0
    as: rnd
    kind: session-element
    scope: iteration
    config:
      email: { syntax: email, domain: shop.test }
session:
  groups:
    - name: sign up
      requests:
        - name: post signup
          method: POST
          url: /signup
          body:
            json: { email: "${rnd.email}" }
load:
  vus: 1
  iterations: 3
`), 0o644))
	e2etest.MustCLI(t, p, tester, "", "run", script)
	mu.Lock()
	require.Len(t, bodies, 3)
	require.Regexp(t, `"email":"[^"]+@shop\.test"`, bodies[0])
	mu.Unlock()

	// A plugin directory without it: `barrage run` fetches it from the server it is signed in
	// to, verified as install verifies it; signed in nowhere, it says how to get it.
	out, errOut, err = e2etest.CLI(t, p, tester, "", "run", "--plugins", t.TempDir(), script)
	require.NoError(t, err, "stdout: %s\nstderr: %s", out, errOut)
	require.Contains(t, errOut, "fetching acme/random-data@^1.0 from "+p.URL)
	require.Contains(t, errOut, "installed acme/random-data@1.0.0 (session-element)")
	mu.Lock()
	require.Len(t, bodies, 6)
	mu.Unlock()
	_, errOut, exit := e2etest.RunWithEnv(t, []string{"BARRAGE_SERVER=" + p.URL}, "run", "--plugins", t.TempDir(), script)
	require.NotZero(t, exit)
	require.Contains(t, errOut, "acme/random-data@^1.0 is not in")
	require.Contains(t, errOut, "cannot be fetched from the marketplace: not signed in")

	// On an agent with no plugin of its own: the server resolves the plugin for the tester, the
	// agent fetches it, verifies it and keeps it in its cache, and the run's manifest names the
	// signed SHA256SUMS and the key.
	agentToken := strings.TrimSpace(e2etest.MustCLI(t, p, tester, "", "agents", "create", "mine"))
	cache := t.TempDir()
	agent := e2etest.StartAgent(t, p, agentToken, "BARRAGE_PLUGIN_DIR="+t.TempDir(), "XDG_CACHE_HOME="+cache)
	e2etest.Eventually(t, 30*time.Second, "the agent online", func() bool {
		return strings.Contains(e2etest.MustCLI(t, p, tester, "", "agents", "list"), " online ")
	})
	testID := strings.TrimSpace(e2etest.MustCLI(t, p, tester, "", "tests", "push", script))
	runOnAgent := func() (string, string, error) {
		mu.Lock()
		bodies = nil
		mu.Unlock()
		return e2etest.CLI(t, p, tester, "", "runs", "start", "--test", testID, "--watch")
	}
	out, errOut, err = runOnAgent()
	require.NoError(t, err, "stdout: %s\nstderr: %s\nagent: %s", out, errOut, agent.Stderr)
	require.Regexp(t, `plugin rnd acme/random-data@1\.0\.0 \(session-element\) from the marketplace: SHA256SUMS sha256 [0-9a-f]{64}, signed by key [0-9a-f]{16}`, errOut)
	mu.Lock()
	require.Len(t, bodies, 3)
	require.Regexp(t, `"email":"[^"]+@shop\.test"`, bodies[0])
	mu.Unlock()
	// The range was pinned to the version it matched when the script was generated.
	scriptID := strings.TrimSpace(e2etest.MustCLI(t, p, tester, "", "scripts", "generate", testID))
	cached, err := filepath.Glob(filepath.Join(cache, "barrage", "artifacts", "*"))
	require.NoError(t, err)
	require.Len(t, cached, 1)
	fi, err := os.Stat(cached[0])
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o555), fi.Mode().Perm(), "kept read-only")

	// The agent's cache tampered with: the entry is fetched again, and the run runs the
	// verified bytes.
	require.NoError(t, os.Chmod(cached[0], 0o755))
	require.NoError(t, os.WriteFile(cached[0], []byte("#!/bin/sh\necho evil\n"), 0o755))
	out, errOut, err = runOnAgent()
	require.NoError(t, err, "stdout: %s\nstderr: %s\nagent: %s", out, errOut, agent.Stderr)
	require.Contains(t, agent.Stderr.String(), "a cached plugin does not match its digest; fetching it again")
	mu.Lock()
	require.Len(t, bodies, 3)
	mu.Unlock()

	// Storage tampered with: the next install refuses the bytes.
	sum := regexp.MustCompile(`sha256 ([0-9a-f]{64})`).FindStringSubmatch(installed)[1]
	blobPath := filepath.Join(data, "blobs", sum[:2], sum)
	require.NoError(t, os.Chmod(blobPath, 0o600))
	f, err := os.OpenFile(blobPath, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("XX"), 100)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	other := t.TempDir()
	m := e2etest.CodeLine.FindStringSubmatch(e2etest.MustCLI(t, p, admin, "", "admin", "invite", "--template", "demo"))
	e2etest.MustCLI(t, p, other, "a long password 1\n", "signup", "--code", m[1], "--email", "other@example.com", "--name", "O")
	e2etest.MustCLI(t, p, other, "a long password 1\n", "login", "--email", "other@example.com")
	_, errOut, err = e2etest.CLI(t, p, other, "", "plugin", "install", "acme/random-data@1.0.0")
	require.Error(t, err, "a tampered artifact is not installed")
	require.NotContains(t, e2etest.MustCLI(t, p, other, "", "plugin", "list"), "acme/random-data")
	t.Logf("tampered install: %s", errOut)
	// ... and an agent that has not cached it refuses to run it.
	otherToken := strings.TrimSpace(e2etest.MustCLI(t, p, tester, "", "agents", "create", "fresh"))
	fresh := e2etest.StartAgent(t, p, otherToken, "BARRAGE_PLUGIN_DIR="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir())
	_ = agent.Cmd.Process.Kill()
	<-agent.Done
	e2etest.Eventually(t, 30*time.Second, "only the fresh agent online", func() bool {
		return regexp.MustCompile(`fresh\s.* online `).MatchString(e2etest.MustCLI(t, p, tester, "", "agents", "list"))
	})
	out, errOut, err = runOnAgent()
	require.Error(t, err, "stdout: %s\nstderr: %s\nagent: %s", out, errOut, fresh.Stderr)
	require.Contains(t, out+errOut, "refused")
	t.Logf("a tampered artifact on a fresh agent: %s", errOut)
	mu.Lock()
	require.Empty(t, bodies, "nothing ran")
	mu.Unlock()

	// Revoked: gone.
	_, errOut, err = e2etest.CLI(t, p, admin, "", "admin", "plugin", "revoke", "acme/correlation-id@1.0.0")
	require.Error(t, err, "a revocation says why")
	require.Contains(t, errOut, "reason")
	e2etest.MustCLI(t, p, admin, "", "admin", "plugin", "revoke", "acme/correlation-id@1.0.0", "--reason", "leaks ids")
	_, errOut, err = e2etest.CLI(t, p, tester, "", "plugin", "install", "acme/correlation-id@1.0.0")
	require.Error(t, err)
	require.Contains(t, errOut, fmt.Sprint(http.StatusGone))
	require.Contains(t, errOut, "leaks ids")

	// A revoked version refuses new runs of the scripts that pinned it, naming it; a range no
	// longer finds it.
	e2etest.MustCLI(t, p, admin, "", "admin", "plugin", "revoke", "acme/random-data@1.0.0", "--reason", "tampered")
	_, errOut, err = e2etest.CLI(t, p, tester, "", "runs", "start", "--script", scriptID)
	require.Error(t, err)
	require.Contains(t, errOut, "acme/random-data@1.0.0 was revoked (tampered): no new run may use it")
	_, errOut, err = runOnAgent()
	require.Error(t, err)
	require.Contains(t, errOut, "acme/random-data@^1.0: no published version that you may use matches ^1.0")
	// ... and `barrage run`, signed in, refuses the copy installed before.
	_, errOut, err = e2etest.CLI(t, p, tester, "", "run", script)
	require.Error(t, err)
	require.Contains(t, errOut, "plugin acme/random-data@1.0.0 was revoked (tampered): no run may use it; remove acme/random-data/1.0.0 from")
}
