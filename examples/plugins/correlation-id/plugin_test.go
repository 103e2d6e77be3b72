package correlationid_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/sdk"
	"github.com/barrage-load/barrage/sdk/host"
)

// The plugin is Python: these tests make its virtualenv, run its and the Python SDK's unit
// tests, build it as its author would, and start it as Barrage's host does, through go-plugin as
// a real process with AutoMTLS, gRPC only and no host environment.

const notEchoed = "correlation id not echoed"

// TestPlugin drives the built plugin through the Go SDK's client.
func TestPlugin(t *testing.T) {
	pyz := build(t)

	t.Run("Describe", func(t *testing.T) {
		t.Parallel()
		b := setup(t, pyz)
		info, err := b.plugin.Describe(t.Context())
		require.NoError(t, err)
		require.Equal(t, "correlation-id", info.Name)
		require.Equal(t, "1.0.0", info.Version)
		require.Equal(t, []sdk.Kind{sdk.KindURL}, info.Kinds)
		require.Equal(t, sdk.ProtocolVersion, info.ProtocolVersion)
		require.NotEmpty(t, info.Description)

		schema, err := sdk.CompileConfigSchema(info.ConfigSchema)
		require.NoError(t, err, "the config schema is not a valid JSON Schema")
		for _, good := range []string{`{}`, `{"header": "X-Request-ID", "require_echo": true}`} {
			require.Empty(t, schema.Validate([]byte(good)), good)
		}
		for _, bad := range []string{`{"header": ""}`, `{"header": "X Id"}`, `{"require_echo": "yes"}`, `{"echo": true}`} {
			require.NotEmpty(t, schema.Validate([]byte(bad)), bad)
		}
	})

	t.Run("BeforeGivesEachConcurrentCallItsOwnID", func(t *testing.T) {
		t.Parallel()
		b := setup(t, pyz)
		hook := b.plugin.URL()
		require.NoError(t, hook.Configure(t.Context(), []byte(`{}`)))

		// 50 virtual users at once: their calls share one stream and travel in batches.
		const n = 50
		reqs := make([]*sdk.Request, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			reqs[i] = &sdk.Request{
				Method: "POST", URL: fmt.Sprintf("http://127.0.0.1:8081/orders/%d", i),
				Header: http.Header{"Accept": {"application/json"}}, Body: []byte(strconv.Itoa(i)),
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = hook.Before(t.Context(), sdk.Call{VU: i + 1, Iteration: 1, Request: "order"}, reqs[i])
			}()
		}
		wg.Wait()

		seen := make(map[string]int, n)
		for i, r := range reqs {
			require.NoError(t, errs[i])
			id := r.Header.Get("X-Correlation-ID")
			u, err := uuid.Parse(id)
			require.NoError(t, err, "call %d: %q is not a uuid", i, id)
			require.Equal(t, uuid.Version(4), u.Version())
			prev, dup := seen[id]
			require.False(t, dup, "calls %d and %d got the same id", prev, i)
			seen[id] = i
			// The rest of the request comes back as it went.
			require.Equal(t, "POST", r.Method)
			require.Equal(t, fmt.Sprintf("http://127.0.0.1:8081/orders/%d", i), r.URL)
			require.Equal(t, "application/json", r.Header.Get("Accept"))
			require.Equal(t, strconv.Itoa(i), string(r.Body))
		}
	})

	t.Run("AfterSetsTheVariable", func(t *testing.T) {
		t.Parallel()
		b := setup(t, pyz)
		hook := b.plugin.URL()
		require.NoError(t, hook.Configure(t.Context(), []byte(`{}`)))
		req := before(t, hook)
		id := req.Header.Get("X-Correlation-ID")

		// No echo is needed unless require_echo says so.
		out, err := hook.After(t.Context(), sdk.Call{VU: 1, Iteration: 1, Request: "home"}, req,
			&sdk.Response{Status: 200, Header: http.Header{}})
		require.NoError(t, err)
		require.Equal(t, sdk.Outcome{Vars: sdk.Vars{"correlation_id": id}}, out)
	})

	t.Run("RequireEchoFailsARequestWithoutTheSameID", func(t *testing.T) {
		t.Parallel()
		b := setup(t, pyz)
		hook := b.plugin.URL()
		require.NoError(t, hook.Configure(t.Context(), []byte(`{"header": "X-Request-ID", "require_echo": true}`)))
		req := before(t, hook)
		id := req.Header.Get("X-Request-ID")
		require.NotEmpty(t, id)
		require.Empty(t, req.Header.Get("X-Correlation-ID"))

		call := sdk.Call{VU: 1, Iteration: 1, Request: "home"}
		for _, c := range []struct {
			name   string
			header http.Header
			want   sdk.Outcome
		}{
			{"echoed", http.Header{"X-Request-Id": {id}}, sdk.Outcome{Vars: sdk.Vars{"correlation_id": id}}},
			{"missing", http.Header{"Content-Type": {"text/plain"}}, sdk.Outcome{Fail: notEchoed}},
			{"another id", http.Header{"X-Request-Id": {uuid.NewString()}}, sdk.Outcome{Fail: notEchoed}},
		} {
			out, err := hook.After(t.Context(), call, req, &sdk.Response{Status: 200, Header: c.header})
			require.NoError(t, err, c.name)
			require.Equal(t, c.want, out, c.name)
		}
	})

	t.Run("ConfigErrorNamesTheField", func(t *testing.T) {
		t.Parallel()
		b := setup(t, pyz)
		hook := b.plugin.URL()
		for _, c := range []struct{ config, field, reason string }{
			{`{"header": "X Id"}`, "header", "must be an HTTP header name"},
			{`{"require_echo": "yes"}`, "require_echo", "must be true or false"},
			{`{"echo": true}`, "echo", "unknown setting"},
		} {
			err := hook.Configure(t.Context(), []byte(c.config))
			var ce *sdk.ConfigError
			require.ErrorAs(t, err, &ce, c.config)
			require.Equal(t, sdk.ConfigError{Field: c.field, Reason: c.reason}, *ce)
		}
		// A refused config leaves the plugin as it was.
		req := before(t, hook)
		require.NotEmpty(t, req.Header.Get("X-Correlation-ID"))
	})

	t.Run("RunsAsNobody", func(t *testing.T) {
		t.Parallel()
		if os.Geteuid() != 0 {
			t.Skip("only root can start a process as nobody")
		}
		// As the host does: a copy nobody can run in a directory nobody may only enter.
		dir, err := os.MkdirTemp("", "barrage-pyz-")
		require.NoError(t, err)
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		require.NoError(t, os.Chmod(dir, 0o711))
		exe := filepath.Join(dir, "correlation-id.pyz")
		data, err := os.ReadFile(pyz)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(exe, data, 0o555))
		nobody, err := user.Lookup("nobody")
		require.NoError(t, err)
		uid, _ := strconv.Atoi(nobody.Uid)
		gid, _ := strconv.Atoi(nobody.Gid)

		b := setup(t, exe, func(cmd *exec.Cmd) {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		})
		hook := b.plugin.URL()
		require.NoError(t, hook.Configure(t.Context(), []byte(`{}`)))
		require.NotEmpty(t, before(t, hook).Header.Get("X-Correlation-ID"))
	})

	t.Run("KillEndsTheProcess", func(t *testing.T) {
		t.Parallel()
		b := setup(t, pyz)
		b.client.Kill()
		require.True(t, b.client.Exited())
	})

	t.Run("RefusesToRunByHand", func(t *testing.T) {
		t.Parallel()
		cmd := exec.Command(pyz)
		cmd.Env = []string{} // no cookie
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit)
		require.Equal(t, 1, exit.ExitCode())
		require.Empty(t, stdout.String())
		require.Contains(t, stderr.String(), "correlation-id 1.0.0 is a Barrage plugin")
	})
}

// testBundle is a started plugin process.
type testBundle struct {
	client *plugin.Client
	plugin host.Client
}

// setup starts the plugin at path as Barrage's host does and kills it when t ends.
func setup(t *testing.T, path string, opts ...func(*exec.Cmd)) *testBundle {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	sum := sha256.Sum256(data)
	cmd := exec.Command(path)
	for _, o := range opts {
		o(cmd)
	}
	log := newTestLog(t) // before Kill's clean-up, so that it ends after it
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  host.Handshake,
		VersionedPlugins: host.PluginSets(),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		SkipHostEnv:      true,
		SecureConfig:     &plugin.SecureConfig{Checksum: sum[:], Hash: sha256.New()},
		Logger: hclog.New(&hclog.LoggerOptions{
			Name: "correlation-id", Level: hclog.Debug, Output: log,
		}),
	})
	t.Cleanup(client.Kill)
	rpc, err := client.Client()
	require.NoError(t, err)
	require.NoError(t, rpc.Ping(), "the health service does not report plugin SERVING")
	sc, err := host.Dispense(rpc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sc.Close() })
	return &testBundle{client: client, plugin: sc}
}

// before runs the hook's Before on a fresh request and returns the request.
func before(t *testing.T, hook sdk.URLHook) *sdk.Request {
	t.Helper()
	req := &sdk.Request{Method: "GET", URL: "http://127.0.0.1:8081/", Header: http.Header{}}
	require.NoError(t, hook.Before(t.Context(), sdk.Call{VU: 1, Iteration: 1, Request: "home"}, req))
	return req
}

// build makes the SDK's virtualenv, runs the Python unit tests, and builds the plugin into a
// temporary directory. Without python3 there is nothing to test; CI has it.
func build(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		if _, err := exec.LookPath("python3"); err != nil {
			t.Skip("python3 is not installed")
		}
	}
	here, err := os.Getwd()
	require.NoError(t, err)
	root := filepath.Join(here, "..", "..", "..")
	python, _ := run(t, exec.Command(filepath.Join(root, "scripts", "python-env.sh")))
	python = strings.TrimSpace(python)

	sdkPython := filepath.Join(root, "sdk", "python")
	for _, dir := range []struct{ dir, start string }{{here, "."}, {sdkPython, "tests"}} {
		cmd := exec.Command(python, "-B", "-m", "unittest", "discover", "-s", dir.start, "-v")
		cmd.Dir = dir.dir
		cmd.Env = append(pythonEnv(), "PYTHONPATH="+sdkPython)
		_, report := run(t, cmd)
		t.Logf("python unit tests in %s:\n%s", dir.dir, report)
	}

	pyz := filepath.Join(t.TempDir(), "correlation-id.pyz")
	run(t, exec.Command(filepath.Join(here, "build.sh"), pyz))
	return pyz
}

// pythonEnv is this process's environment without what would make a Python test act as a
// plugin started by a host.
func pythonEnv() []string {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, host.Handshake.MagicCookieKey+"=") && !strings.HasPrefix(e, "PLUGIN_") {
			env = append(env, e)
		}
	}
	return append(env, "PYTHONDONTWRITEBYTECODE=1")
}

// run runs cmd and returns its stdout and stderr; on failure it stops the test with both.
func run(t *testing.T, cmd *exec.Cmd) (stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	require.NoError(t, err, "%s\nstdout:\n%s\nstderr:\n%s", strings.Join(cmd.Args, " "), out.String(), errOut.String())
	return out.String(), errOut.String()
}

// testLog writes go-plugin's log, with the plugin's stderr, to the test's log until the test
// ends: a go-plugin goroutine may still log once the process is gone.
type testLog struct {
	t    *testing.T
	mu   sync.Mutex
	done bool
}

func newTestLog(t *testing.T) *testLog {
	l := &testLog{t: t}
	t.Cleanup(func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.done = true
	})
	return l
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}
