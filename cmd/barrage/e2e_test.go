package main_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// These tests run the real binary: `barrage serve` on its embedded PostgreSQL, and the client
// commands against it, as a person would.

var binary string

func TestMain(m *testing.M) {
	// A folder any user can enter: the ordinary-user test runs the binary as another account.
	dir, err := os.MkdirTemp("", "barrage-e2e-")
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "barrage")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build barrage: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// lockedBuffer collects a process's output while tests read it, and tells a test waiting for a
// line when more came.
type lockedBuffer struct {
	mu   sync.Mutex
	b    bytes.Buffer
	grew chan struct{} // closed by the next write; nil while no one waits
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.grew != nil {
		close(l.grew)
		l.grew = nil
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// await waits until the output matches re, and returns the match's groups. The process of name
// ending first (done, which gets its error back) or within passing fails the test.
func (l *lockedBuffer) await(t *testing.T, re *regexp.Regexp, within time.Duration, name string, done chan error) []string {
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

type serveProc struct {
	cmd            *exec.Cmd
	url            string
	stdout, stderr *lockedBuffer
	done           chan error
}

var servingLine = regexp.MustCompile(`msg=serving addr=(http://127\.0\.0\.1:\d+)`)

// startServe runs `barrage serve` with a free port and the given data folder, and waits until
// /readyz answers 200.
func startServe(t *testing.T, dataDir string, cred *syscall.Credential, extraEnv ...string) *serveProc {
	t.Helper()
	p := &serveProc{stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan error, 1)}
	p.cmd = exec.Command(binary, "serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir)
	p.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, extraEnv...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if cred != nil {
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	require.NoError(t, p.cmd.Start())
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() { p.stop(t) })

	// The first start may download PostgreSQL.
	p.url = p.stderr.await(t, servingLine, 3*time.Minute, "serve", p.done)[1]
	eventually(t, time.Minute, "serve's /readyz to answer 200", func() bool {
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("serve exited early: %v\nstderr:\n%s", err, p.stderr.String())
		default:
		}
		res, err := http.Get(p.url + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	return p
}

// stop sends SIGTERM and requires a clean exit.
func (p *serveProc) stop(t *testing.T) {
	t.Helper()
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		require.NoError(t, err, "serve must exit 0 on SIGTERM\nstderr:\n%s", p.stderr.String())
	case <-time.After(60 * time.Second):
		_ = p.cmd.Process.Kill()
		t.Fatalf("serve did not stop on SIGTERM\nstderr:\n%s", p.stderr.String())
	}
}

// codeLine finds an invitation code: serve's first-admin line, or admin invite's code alone.
var codeLine = regexp.MustCompile(`(?m)^(?:.*invitation code: )?(brg_inv_[a-z2-7]+)$`)

// cli runs a client command with its own config folder and the given stdin.
func cli(t *testing.T, p *serveProc, configDir, stdin string, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + configDir, "BARRAGE_CONFIG_DIR=" + configDir, "BARRAGE_SERVER=" + p.url}
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

func mustCLI(t *testing.T, p *serveProc, configDir, stdin string, args ...string) string {
	t.Helper()
	out, errOut, err := cli(t, p, configDir, stdin, args...)
	require.NoError(t, err, "barrage %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), out, errOut)
	return out
}

// reachableDir makes a data folder that an unprivileged PostgreSQL account can enter.
func reachableDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "barrage-e2e-data-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func TestServeOnEmbeddedPostgresWithTheCLI(t *testing.T) {
	data := reachableDir(t)
	admin, bob := t.TempDir(), t.TempDir()

	p := startServe(t, data, nil)
	m := codeLine.FindStringSubmatch(p.stdout.String())
	require.NotNil(t, m, "the first start prints the first-admin code\nstdout: %s", p.stdout.String())
	firstCode := m[1]
	require.NotContains(t, p.stderr.String(), firstCode, "the code is printed, never logged")

	out := mustCLI(t, p, admin, "admin password 123\n", "signup", "--code", firstCode, "--email", "ada@example.com", "--name", "Ada")
	require.Contains(t, out, "Account created")
	mustCLI(t, p, admin, "admin password 123\n", "login", "--email", "ada@example.com")
	fi, err := os.Stat(filepath.Join(admin, "credentials.json"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "credentials are private")
	require.Contains(t, mustCLI(t, p, admin, "", "me"), "license: unlimited")

	out = mustCLI(t, p, admin, "", "admin", "invite", "--template", "demo", "--note", "for bob")
	m = codeLine.FindStringSubmatch(out)
	require.NotNil(t, m, out)
	bobCode := m[1]
	mustCLI(t, p, bob, "bobs long password\n", "signup", "--code", bobCode, "--email", "bob@example.com", "--name", "Bob")
	me := mustCLI(t, p, bob, "", "me")
	require.Contains(t, me, "demo: 100 VUs per run")
	require.Contains(t, me, "using: namespaces 0 of 5, pending versions 0 of 5, storage 0 B of 256.0 MiB, targets 0 of 20, tests 0 of 200", "the quotas, from the server's defaults")

	// A spent code: a clear error, non-zero exit.
	_, errOut, err := cli(t, p, t.TempDir(), "eves long password\n", "signup", "--code", bobCode, "--email", "eve@example.com", "--name", "Eve")
	require.Error(t, err)
	require.Contains(t, errOut, "409 Conflict: this invitation code has already been used")

	// Bob is no admin.
	_, errOut, err = cli(t, p, bob, "", "admin", "users")
	require.Error(t, err)
	require.Contains(t, errOut, "403")

	users := mustCLI(t, p, admin, "", "admin", "users")
	require.Contains(t, users, "ada@example.com")
	require.Contains(t, users, "bob@example.com")

	token := strings.TrimSpace(mustCLI(t, p, admin, "", "tokens", "create", "--name", "ci", "--scopes", "read"))
	require.Regexp(t, `^brg_pat_`, token)
	req, _ := http.NewRequest("GET", p.url+"/v1/me", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, string(body))
	require.Contains(t, mustCLI(t, p, admin, "", "tokens", "list"), "ci")

	// With database access, an admin can issue codes while the server runs.
	out = mustCLI(t, p, admin, "", "admin", "invite", "--local", "--data-dir", data, "--role", "admin")
	require.Regexp(t, codeLine, out)

	p.stop(t)
	require.NotContains(t, p.stderr.String(), "level=ERROR")

	// Restarted, the data is there and no new first-admin code is printed.
	p2 := startServe(t, data, nil)
	require.NotRegexp(t, codeLine, p2.stdout.String())
	mustCLI(t, p2, admin, "admin password 123\n", "login", "--email", "ada@example.com")
	require.Contains(t, mustCLI(t, p2, admin, "", "admin", "invitations"), "for bob")
	// Stored tokens are never sent to another server.
	other := *p2
	other.url = "http://127.0.0.1:1"
	_, errOut, err = cli(t, &other, admin, "", "me")
	require.Error(t, err)
	require.Contains(t, errOut, "signed in to "+p2.url+", not http://127.0.0.1:1")

	// A password change lists the live personal tokens and revokes them when asked; every
	// session is signed out, so the CLI signs in again with the new password.
	out, errOut, err = cli(t, p2, admin, "admin password 123\nadmin password 456\n", "password", "--revoke-tokens")
	require.NoError(t, err, "stderr: %s", errOut)
	require.Contains(t, out, "ci", "the live tokens are listed")
	require.Contains(t, out, "your personal API tokens were revoked")
	req, _ = http.NewRequest("GET", p2.url+"/v1/me", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusUnauthorized, res.StatusCode, "the token went with the old password")
	_, _, err = cli(t, p2, admin, "", "me")
	require.Error(t, err, "signed out")
	mustCLI(t, p2, admin, "admin password 456\n", "login", "--email", "ada@example.com")

	mustCLI(t, p2, admin, "", "logout")
	_, errOut, err = cli(t, p2, admin, "", "me")
	require.Error(t, err)
	require.Contains(t, errOut, "not signed in")
}

// As an ordinary user the same binary starts its database without switching accounts. When the
// suite runs as root, run serve as nobody to prove it; otherwise the test above already did.
func TestServeAsOrdinaryUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the suite already runs as an ordinary user: TestServeOnEmbeddedPostgresWithTheCLI covers it")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no nobody account")
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	data := reachableDir(t)
	home := filepath.Join(data, "home")
	require.NoError(t, os.MkdirAll(home, 0o755))
	require.NoError(t, os.Chown(data, uid, gid))
	require.NoError(t, os.Chown(home, uid, gid))
	// nobody's own HOME: its download cache, separate from root's.
	p := startServe(t, filepath.Join(data, "srv"), &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, "HOME="+home)
	require.Regexp(t, codeLine, p.stdout.String())
	ps, err := exec.Command("ps", "-o", "user=", "-p", strconv.Itoa(p.cmd.Process.Pid)).Output()
	if err == nil {
		require.Equal(t, "nobody", strings.TrimSpace(string(ps)))
	}
	p.stop(t)
}
