package plugins_test

import (
	"bufio"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/barrage-load/barrage/internal/e2etest"
	"github.com/barrage-load/barrage/internal/registry"
	"github.com/stretchr/testify/require"
)

// received is what the target saw of one request.
type received struct {
	method, uri, signature, env, correlation string
	body                                     []byte
}

func TestRunWithExamplePlugins(t *testing.T) {
	t.Parallel()
	bin := e2etest.BuildPlugins(t, "random-data", "hmac-sign", "inject-headers")
	// correlation-id is written in Python: any language go-plugin speaks will do.
	build := exec.Command("../../../../examples/plugins/correlation-id/build.sh", filepath.Join(bin, "correlation-id"))
	b, err := build.CombinedOutput()
	require.NoError(t, err, "%s", b)
	// Its zipapp names the python of a virtualenv under /tmp, which the sandbox hides unless
	// the operator lets plugins see it.
	python, err := exec.Command("../../../../scripts/python-env.sh").Output()
	require.NoError(t, err)
	venv := "--plugin-path=" + filepath.Dir(filepath.Dir(strings.TrimSpace(string(python))))
	pluginDir := filepath.Join(t.TempDir(), "plugins")
	env := []string{"BARRAGE_PLUGIN_DIR=" + pluginDir, "HMAC_KEY=e2e-shared-key", "DATABASE_URL=postgres://must-not-leak"}

	for _, n := range []string{"random-data", "hmac-sign", "inject-headers", "correlation-id"} {
		out, errOut, code := e2etest.RunWithEnv(t, env, "plugin", "add", venv, filepath.Join(bin, n))
		require.Zero(t, code, "%s%s", out, errOut)
		require.Contains(t, out, "added "+n+"@1.0.0")
	}
	out, _, code := e2etest.RunWithEnv(t, env, "plugin", "list")
	require.Zero(t, code)
	require.Regexp(t, `(?m)^hmac-sign\s+1\.0\.0\s+url\s`, out)

	script := filepath.Join(t.TempDir(), "signup.yaml")
	var mu sync.Mutex
	var got []received
	var policies []string // of the run's threads, while it sends
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, received{r.Method, r.RequestURI, r.Header.Get("X-Signature"), r.Header.Get("X-Env"), r.Header.Get("X-Correlation-ID"), body})
		if policies == nil {
			policies = schedPolicies(script)
		}
		mu.Unlock()
		w.Header().Set("X-Request-Id", "req-42")
		w.WriteHeader(http.StatusCreated)
	}))
	defer target.Close()

	require.NoError(t, os.WriteFile(script, []byte(`
version: 1
name: sign-ups
base_url: `+target.URL+`
plugins:
  - use: random-data@1.0.0
    as: rnd
    kind: session-element
    config:
      email: { syntax: email, domain: example.test }
      id: { syntax: uuid }
  - use: hmac-sign@1.0.0
    as: sign
    kind: url
    config: { key_env: HMAC_KEY, read_header: X-Request-Id }
  - use: inject-headers@1.0.0
    as: inject
    kind: source-modifier
    config: { headers: { X-Env: staging } }
  - use: correlation-id@1.0.0
    as: corr
    kind: url
session:
  groups:
    - name: sign up
      requests:
        - name: signup
          method: POST
          url: /signup?id=${rnd.id}
          plugins: [sign]
          body: { json: { email: "${rnd.email}" } }
          assert: [ { status: 201 } ]
        - name: confirm
          url: /confirm/${sign.x_request_id}
          plugins: [corr]
load:
  vus: 4
  iterations: 40
`), 0o644))

	out, errOut, code := e2etest.RunWithEnv(t, env, "run", "--quiet", venv, "--plugin-env", "HMAC_KEY", "--out", filepath.Join(t.TempDir(), "r.json"), script)
	require.Zero(t, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Contains(t, out, "hook sign (calls)")
	require.Contains(t, out, "hook corr (calls)")

	require.Len(t, got, 80)
	emails, correlations := map[string]bool{}, map[string]bool{}
	emailRe := regexp.MustCompile(`^[a-z0-9._-]+@example\.test$`)
	for _, r := range got {
		require.Equal(t, "staging", r.env, "the source plugin added X-Env to every request: %s", r.uri)
		if r.method != http.MethodPost {
			require.Equal(t, "/confirm/req-42", r.uri, "the url plugin's variable reached the next request")
			require.Empty(t, r.signature, "only the requests that list sign are signed")
			require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, r.correlation, "the Python plugin set a uuid4")
			require.False(t, correlations[r.correlation], "a fresh id per request")
			correlations[r.correlation] = true
			continue
		}
		mac := hmac.New(sha256.New, []byte("e2e-shared-key"))
		mac.Write([]byte(r.method + "\n" + r.uri + "\n"))
		mac.Write(r.body)
		require.Equal(t, hex.EncodeToString(mac.Sum(nil)), r.signature, "signature of %s %s", r.method, r.uri)
		var doc struct{ Email string }
		require.NoError(t, json.Unmarshal(r.body, &doc))
		require.Regexp(t, emailRe, doc.Email)
		require.Regexp(t, `^/signup\?id=[0-9a-f-]{36}$`, r.uri)
		require.Empty(t, r.correlation, "corr is attached to confirm only")
		emails[doc.Email] = true
	}
	require.Greater(t, len(emails), 35, "each iteration got fresh values")
	require.NotEmpty(t, policies)
	for _, p := range policies {
		require.Equal(t, "3", p, "with URL hooks every thread of the run is under SCHED_BATCH: %v", policies)
	}
}

// schedPolicies returns the scheduling policy of every thread of the process whose command
// line names arg, from /proc.
func schedPolicies(arg string) []string {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, c := range procs {
		cmdline, err := os.ReadFile(c)
		if err != nil || !slices.Contains(strings.Split(string(cmdline), "\x00"), arg) {
			continue
		}
		tasks, _ := filepath.Glob(filepath.Join(filepath.Dir(c), "task", "*", "sched"))
		var out []string
		for _, task := range tasks {
			sched, _ := os.ReadFile(task)
			if m := regexp.MustCompile(`(?m)^policy\s+:\s+(\d+)$`).FindSubmatch(sched); m != nil {
				out = append(out, string(m[1]))
			}
		}
		return out
	}
	return []string{"no process names " + arg}
}

func TestRunRefusesABadPluginConfigNamingTheField(t *testing.T) {
	t.Parallel()
	bin := e2etest.BuildPlugins(t, "random-data")
	pluginDir := filepath.Join(t.TempDir(), "plugins")
	env := []string{"BARRAGE_PLUGIN_DIR=" + pluginDir}
	_, errOut, code := e2etest.RunWithEnv(t, env, "plugin", "add", filepath.Join(bin, "random-data"))
	require.Zero(t, code, errOut)
	script := filepath.Join(t.TempDir(), "s.yaml")
	require.NoError(t, os.WriteFile(script, []byte(`
version: 1
plugins: [{use: random-data@1.0.0, as: rnd, kind: session-element, config: {n: {syntax: number, min: 9, max: 1}}}]
session: {groups: [{name: g, requests: [{name: r, url: "http://127.0.0.1:1/${rnd.n}"}]}]}
load: {vus: 1, iterations: 1}
`), 0o644))
	_, errOut, code = e2etest.RunWithEnv(t, env, "run", script)
	require.Equal(t, 65, code, errOut)
	require.Contains(t, errOut, "plugins.rnd.config.n")

	_, errOut, code = e2etest.RunWithEnv(t, []string{"BARRAGE_PLUGIN_DIR=" + t.TempDir()}, "run", script)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "random-data@1.0.0 is not in")
}

// TestRunRefusesAGrantOutsideThePluginsNeed: random-data declares no need of the network, so
// a grant to it, in the script or with --plugin-grant, is a script error that says where.
func TestRunRefusesAGrantOutsideThePluginsNeed(t *testing.T) {
	t.Parallel()
	bin := e2etest.BuildPlugins(t, "random-data")
	env := []string{"BARRAGE_PLUGIN_DIR=" + filepath.Join(t.TempDir(), "plugins")}
	_, errOut, code := e2etest.RunWithEnv(t, env, "plugin", "add", filepath.Join(bin, "random-data"))
	require.Zero(t, code, errOut)
	script := filepath.Join(t.TempDir(), "s.yaml")
	require.NoError(t, os.WriteFile(script, []byte(`version: 1
plugins:
  - { use: random-data@1.0.0, as: rnd, kind: session-element, network: ["db.example:5432"] }
session: {groups: [{name: g, requests: [{name: r, url: "http://127.0.0.1:1/"}]}]}
load: {vus: 1, iterations: 1}
`), 0o644))
	_, errOut, code = e2etest.RunWithEnv(t, env, "run", script)
	require.Equal(t, 65, code, errOut)
	require.Contains(t, errOut, script+":3: plugins[0].network[0]: grants db.example:5432 to random-data@1.0.0, which declares no need of the network")

	require.NoError(t, os.WriteFile(script, []byte(`version: 1
plugins: [{ use: random-data@1.0.0, as: rnd, kind: session-element }]
session: {groups: [{name: g, requests: [{name: r, url: "http://127.0.0.1:1/"}]}]}
load: {vus: 1, iterations: 1}
`), 0o644))
	_, errOut, code = e2etest.RunWithEnv(t, env, "run", "--plugin-grant", "rnd=db.example:5432", script)
	require.Equal(t, 65, code, errOut)
	require.Contains(t, errOut, "--plugin-grant rnd=db.example:5432: grants db.example:5432 to random-data@1.0.0, which declares no need of the network")

	_, errOut, code = e2etest.RunWithEnv(t, env, "run", "--plugin-grant", "rnd=db.example", script)
	require.Equal(t, 1, code, errOut)
	require.Contains(t, errOut, `--plugin-grant "rnd=db.example": "db.example": want host:port`)
}

func TestPluginNewScaffoldsProjectsThatBuildPassTheirTestAndPassCheck(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"url", "session-element", "source-modifier"} {
		dir := filepath.Join(t.TempDir(), "p")
		name := "my-" + kind
		out, errOut, code := e2etest.RunWithEnv(t, nil, "plugin", "new", name, "--kind", kind, "--dir", dir)
		require.Zero(t, code, "%s%s", out, errOut)
		for _, step := range [][]string{{"mod", "tidy"}, {"test", "./..."}, {"build", "-o", name, "."}} {
			cmd := exec.Command("go", step...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			b, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s: go %v:\n%s", kind, step, b)
		}
		out, errOut, code = e2etest.RunWithEnv(t, nil, "plugin", "check", filepath.Join(dir, name))
		require.Zero(t, code, "%s%s", out, errOut)
		require.Contains(t, out, "the plugin passed every check")
		require.Contains(t, out, fmt.Sprintf("describe: %s@0.1.0", name))
	}
}

// An agent says at start how this machine confines plugins, and with --require-sandbox refuses
// to start when the sandbox is partial. As nobody, with no cgroup it may write, it is partial
// here: the suite, run as root, starts the agent as nobody to see it.
func TestAnAgentThatRequiresTheSandboxRefusesAPartialOne(t *testing.T) {
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		nobody, err := user.Lookup("nobody")
		if err != nil {
			t.Skip("no nobody account")
		}
		uid, _ := strconv.Atoi(nobody.Uid)
		gid, _ := strconv.Atoi(nobody.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
	}
	home := e2etest.ReachableDir(t)
	agent := func(args ...string) (*exec.Cmd, *bufio.Reader) {
		cmd := exec.Command(e2etest.Binary, append([]string{"agent", "--server", "http://127.0.0.1:1"}, args...)...)
		cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "BARRAGE_AGENT_TOKEN=brg_agent_not_a_real_one"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		stderr, err := cmd.StderrPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd, bufio.NewReader(stderr)
	}
	// Without the flag: the agent says what is missing and what plugins fall back to, and goes on.
	_, lines := agent()
	first, err := lines.ReadString('\n')
	require.NoError(t, err)
	if !strings.Contains(first, "plugin sandbox: partial") {
		t.Skipf("this machine gives this user the whole sandbox: %s", first)
	}
	require.Contains(t, first, "cgroup")

	cmd, lines := agent("--require-sandbox")
	rest, _ := io.ReadAll(lines)
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the agent refuses to start: %s", rest)
	require.Equal(t, 1, exit.ExitCode())
	require.Contains(t, string(rest), "plugin sandbox: partial")
	require.Contains(t, string(rest), "--require-sandbox: the plugin sandbox is not fully available")
}

// keygen makes a key only its owner may read, prints the public key, and never replaces a key.
func TestPluginKeygen(t *testing.T) {
	dir := t.TempDir()
	run := func() (string, string, error) {
		cmd := exec.Command(e2etest.Binary, "plugin", "keygen")
		cmd.Env = []string{"BARRAGE_CONFIG_DIR=" + dir}
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		return out.String(), errOut.String(), err
	}
	out, errOut, err := run()
	require.NoError(t, err, errOut)
	pub, err := registry.ParsePublicKey(out)
	require.NoError(t, err)
	require.Contains(t, errOut, pub.ID())
	path := filepath.Join(dir, "signing-key.pem")
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	pemBytes, err := os.ReadFile(path)
	require.NoError(t, err)
	priv, err := registry.ParsePrivateKey(pemBytes)
	require.NoError(t, err)
	require.Equal(t, []byte(pub), []byte(priv.Public().(ed25519.PublicKey)))

	_, errOut, err = run()
	require.Error(t, err)
	require.Contains(t, errOut, "a key is never replaced")
	again, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, pemBytes, again)
}
