// Package e2etest runs the barrage binary as people do, for the end-to-end suites of
// cmd/barrage and cmd/barrage/e2e/...: each test binary builds the binary once (Main), and its
// tests start `barrage serve` on its embedded PostgreSQL, agents, the demo shop and the CLI as
// processes, and wait on what they print.
package e2etest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Root is the repository's folder, which the examples and test data are found from.
var Root = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}()

// Binary is the barrage binary Main built.
var Binary string

// Main builds the barrage binary into a folder any user can enter (a test may run it as another
// account), runs the tests and removes it. A suite's TestMain calls it.
func Main(m *testing.M) {
	dir, err := os.MkdirTemp("", "barrage-e2e-")
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	Binary = filepath.Join(dir, "barrage")
	build := exec.Command("go", "build", "-o", Binary, "./cmd/barrage")
	build.Dir = Root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build barrage: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Output collects a process's output while tests read it, and tells a test waiting for a
// line when more came.
type Output struct {
	mu   sync.Mutex
	b    bytes.Buffer
	grew chan struct{} // closed by the next write; nil while no one waits
}

// Write implements io.Writer: a process writes its output here.
func (l *Output) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.grew != nil {
		close(l.grew)
		l.grew = nil
	}
	return l.b.Write(p)
}

// String is all the output so far.
func (l *Output) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Await waits until the output matches re, and returns the match's groups. The process of name
// ending first (done, which gets its error back) or within passing fails the test.
func (l *Output) Await(t testing.TB, re *regexp.Regexp, within time.Duration, name string, done chan error) []string {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		out := l.b.String()
		if l.grew == nil {
			l.grew = make(chan struct{})
		}
		grew := l.grew
		l.mu.Unlock()
		if m := re.FindStringSubmatch(out); m != nil {
			return m
		}
		select {
		case <-grew:
		case err := <-done:
			done <- err
			if m := re.FindStringSubmatch(l.String()); m != nil { // its last words
				return m
			}
			t.Fatalf("%s ended (%v) before %q\noutput:\n%s", name, err, re, l.String())
		case <-deadline.C:
			t.Fatalf("no %q from %s within %s\noutput:\n%s", re, name, within, l.String())
		}
	}
}

// Server is a `barrage serve` process, with the URL it serves at and its output.
type Server struct {
	Cmd            *exec.Cmd
	URL            string
	Stdout, Stderr *Output
	Done           chan error
	exited         chan struct{} // closed once the process has been waited for (waitFor)
}

var servingLine = regexp.MustCompile(`msg=serving addr=(http://127\.0\.0\.1:\d+)`)

// StartServe runs `barrage serve` with a free port and the given data folder, and waits until
// /readyz answers 200.
func StartServe(t testing.TB, dataDir string, cred *syscall.Credential, extraEnv ...string) *Server {
	t.Helper()
	p := &Server{Stdout: &Output{}, Stderr: &Output{}, Done: make(chan error, 1), exited: make(chan struct{})}
	p.Cmd = exec.Command(Binary, "serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir)
	p.Cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, extraEnv...)
	p.Cmd.Stdout, p.Cmd.Stderr = p.Stdout, p.Stderr
	if cred != nil {
		p.Cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	require.NoError(t, p.Cmd.Start())
	go waitFor(p.Cmd, p.exited, p.Done)
	t.Cleanup(func() { p.Stop(t) })

	// The first start may download PostgreSQL.
	p.URL = p.Stderr.Await(t, servingLine, 3*time.Minute, "serve", p.Done)[1]
	Eventually(t, time.Minute, "serve's /readyz to answer 200", func() bool {
		select {
		case err := <-p.Done:
			p.Done <- err
			t.Fatalf("serve exited early: %v\nstderr:\n%s", err, p.Stderr.String())
		default:
		}
		res, err := http.Get(p.URL + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	return p
}

// Stop sends SIGTERM and requires a clean exit.
func (p *Server) Stop(t testing.TB) {
	t.Helper()
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.Done:
		require.NoError(t, err, "serve must exit 0 on SIGTERM\nstderr:\n%s", p.Stderr.String())
	case <-time.After(60 * time.Second):
		_ = p.Cmd.Process.Kill()
		t.Fatalf("serve did not stop on SIGTERM\nstderr:\n%s", p.Stderr.String())
	}
}

// CodeLine finds an invitation code: serve's first-admin line, or admin invite's code alone.
var CodeLine = regexp.MustCompile(`(?m)^(?:.*invitation code: )?(brg_inv_[a-z2-7]+)$`)

// CLI runs a client command with its own config folder and the given stdin.
func CLI(t testing.TB, p *Server, configDir, stdin string, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, Binary, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + configDir, "BARRAGE_CONFIG_DIR=" + configDir, "BARRAGE_SERVER=" + p.URL}
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// MustCLI is CLI for a command that must succeed: it returns its stdout.
func MustCLI(t testing.TB, p *Server, configDir, stdin string, args ...string) string {
	t.Helper()
	out, errOut, err := CLI(t, p, configDir, stdin, args...)
	require.NoError(t, err, "barrage %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), out, errOut)
	return out
}

// SignUpFirstAdmin signs serve's first admin up with the code p printed at its first start,
// with the password AdminPassword, and in, in the CLI's config folder cfg.
func SignUpFirstAdmin(t testing.TB, p *Server, cfg, email, name string) {
	t.Helper()
	m := CodeLine.FindStringSubmatch(p.Stdout.String())
	require.NotNil(t, m, "the first start prints the first-admin code\nstdout: %s", p.Stdout.String())
	MustCLI(t, p, cfg, AdminPassword+"\n", "signup", "--code", m[1], "--email", email, "--name", name)
	MustCLI(t, p, cfg, AdminPassword+"\n", "login", "--email", email)
}

// AdminPassword is the password SignUpFirstAdmin gives the first admin.
const AdminPassword = "admin password 123"

// ReachableDir makes a data folder that an unprivileged PostgreSQL account can enter.
func ReachableDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "barrage-e2e-data-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// CountingTarget is a target on 127.0.0.1 that counts the requests it answers.
type CountingTarget struct {
	Srv  *httptest.Server
	Hits atomic.Int64
}

// NewCountingTarget starts a counting target, closed at the test's end.
func NewCountingTarget(t testing.TB) *CountingTarget {
	t.Helper()
	ct := &CountingTarget{}
	ct.Srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		ct.Hits.Add(1)
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(ct.Srv.Close)
	return ct
}

// Agent is a `barrage agent` process.
type Agent struct {
	Cmd    *exec.Cmd
	Stderr *Output
	Done   chan error
	exited chan struct{} // closed once the process has been waited for (waitFor)
}

// waitFor waits for cmd, closes exited, then sends what Wait said on done: whoever reads done,
// exited tells that the process is gone, without reading the command's state, which Wait writes.
func waitFor(cmd *exec.Cmd, exited chan struct{}, done chan error) {
	err := cmd.Wait()
	close(exited)
	done <- err
}

// StartAgent starts `barrage agent` with token against p, loading 127.0.0.0/8 only; it is killed
// at the test's end if still running.
func StartAgent(t testing.TB, p *Server, token string, extraEnv ...string) *Agent {
	t.Helper()
	a := &Agent{Stderr: &Output{}, Done: make(chan error, 1), exited: make(chan struct{})}
	a.Cmd = exec.Command(Binary, "agent", "--server", p.URL, "--allow-target", "127.0.0.0/8")
	a.Cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "BARRAGE_AGENT_TOKEN=" + token}, extraEnv...)
	a.Cmd.Stderr = a.Stderr
	require.NoError(t, a.Cmd.Start())
	go waitFor(a.Cmd, a.exited, a.Done)
	t.Cleanup(func() {
		// Told by the waiter, not by reading the command's state, which it writes meanwhile.
		select {
		case <-a.exited:
		default:
			_ = a.Cmd.Process.Kill()
			<-a.exited
		}
	})
	return a
}

// Eventually asks cond every 100ms until it holds, failing the test after within. cond runs in
// the test's goroutine, so it may use require.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		<-tick.C
	}
}

// APIGet reads path with the bearer token into v.
func APIGet(t testing.TB, p *Server, bearer, path string, v any) int {
	t.Helper()
	status, body := APIRead(t, p, bearer, path)
	if status == http.StatusOK && v != nil {
		require.NoError(t, json.Unmarshal(body, v), string(body))
	}
	return status
}

// APIRead reads path with the bearer token: the status and the whole body.
func APIRead(t testing.TB, p *Server, bearer, path string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", p.URL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+bearer)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, body
}

// RunDoc is a run as the API tells it, in the fields the suites read.
type RunDoc struct {
	ID     string `json:"id"`
	State  string `json:"state"`
	Reason string `json:"reason"`
	Shards []struct {
		AgentID string `json:"agent_id"`
		State   string `json:"state"`
		Reason  string `json:"reason"`
	} `json:"shards"`
}

// RunIDLine finds a run's id, alone on its line, in what `barrage runs start` prints.
var RunIDLine = regexp.MustCompile(`(?m)^([0-9a-f-]{36})$`)

// Proc is a barrage process a test drives through its standard streams.
type Proc struct {
	Cmd            *exec.Cmd
	Stdin          io.WriteCloser
	Stdout, Stderr *Output
	Done           chan error
	exited         chan struct{} // closed once the process has been waited for (waitFor)
}

// StartProc runs the binary with args and env (besides PATH and HOME), its stdin a pipe the test
// writes to. At the test's end a process still running gets SIGINT, then SIGKILL.
func StartProc(t testing.TB, env []string, args ...string) *Proc {
	t.Helper()
	p := &Proc{Stdout: &Output{}, Stderr: &Output{}, Done: make(chan error, 1), exited: make(chan struct{})}
	p.Cmd = exec.Command(Binary, args...)
	p.Cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	p.Cmd.Stdout, p.Cmd.Stderr = p.Stdout, p.Stderr
	var err error
	p.Stdin, err = p.Cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, p.Cmd.Start())
	go waitFor(p.Cmd, p.exited, p.Done)
	t.Cleanup(func() {
		select {
		case <-p.exited:
			return
		default:
		}
		_ = p.Cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			_ = p.Cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// WaitFor waits until the process's stderr matches re, and returns the match's groups. The
// process ending first fails the test.
func (p *Proc) WaitFor(t testing.TB, re *regexp.Regexp) []string {
	t.Helper()
	return p.Stderr.Await(t, re, time.Minute, p.Cmd.Args[1], p.Done)
}

// Interrupt sends SIGINT and requires exit status 0.
func (p *Proc) Interrupt(t testing.TB) {
	t.Helper()
	require.NoError(t, p.Cmd.Process.Signal(syscall.SIGINT))
	select {
	case err := <-p.Done:
		require.NoError(t, err, "stderr:\n%s", p.Stderr.String())
	case <-time.After(time.Minute):
		t.Fatalf("%s did not end on SIGINT\nstderr:\n%s", p.Cmd.Args[1], p.Stderr.String())
	}
}

// StartDemoShop runs `barrage demo-shop` on a free port and returns its URL.
func StartDemoShop(t testing.TB) string {
	t.Helper()
	shop := StartProc(t, nil, "demo-shop", "--addr", "127.0.0.1:0")
	return shop.WaitFor(t, regexp.MustCompile(`demo shop on (http://127\.0\.0\.1:\d+)`))[1]
}

// RunWithEnv runs the binary with args and extra environment, and returns stdout, stderr and
// the exit status.
func RunWithEnv(t testing.TB, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(Binary, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return stdout.String(), stderr.String(), code
}

// BuildPlugins builds example plugins into a folder and returns it.
func BuildPlugins(t testing.TB, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	args := []string{"build", "-trimpath", "-o", dir + string(filepath.Separator)}
	for _, n := range names {
		args = append(args, filepath.Join(Root, "examples", "plugins", n))
	}
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return dir
}

// RunCLI runs the binary with args and returns stdout, stderr and the exit status.
func RunCLI(t testing.TB, args ...string) (string, string, int) {
	t.Helper()
	return RunWithEnv(t, nil, args...)
}

// WriteScript writes a script of two requests to target, the second using what the first
// extracted, by 2 VUs for 2s, with the thresholds given (YAML list lines), and returns its path.
func WriteScript(t testing.TB, target, thresholds string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.yaml")
	src := fmt.Sprintf(`
version: 1
name: cli
session:
  groups:
    - name: home
      requests:
        - name: get home
          url: %s/
          extract: [ { var: greeting, regex: "(hello)" } ]
        - name: get greeting
          url: %s/${greeting}
load:
  vus: 2
  duration: 2s
thresholds:
%s
`, target, target, thresholds)
	require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	return path
}

// OneRequestScript writes, in a folder of its own, a script whose session is one request named
// name to url, under load (a YAML mapping, which may be followed by more top-level lines).
func OneRequestScript(t testing.TB, name, url, load string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`version: 1
name: `+name+`
session:
  groups:
    - name: g
      requests:
        - { name: `+name+`, url: "`+url+`/" }
load: `+load+`
`), 0o644))
	return path
}

// RunOut runs a script of one request, name, to url under load (a YAML flow mapping) with
// --quiet --out, and returns what it printed and the path of the --out document.
func RunOut(t testing.TB, name, url, load string) (string, string) {
	t.Helper()
	path := OneRequestScript(t, name, url, load)
	out := filepath.Join(filepath.Dir(path), "result.json")
	stdout, stderr, code := RunCLI(t, "run", "--quiet", "--out", out, path)
	require.Zero(t, code, "stderr: %s", stderr)
	return stdout, out
}
