package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/barrage-load/barrage/internal/e2etest"
	"github.com/stretchr/testify/require"
)

func TestServeOnEmbeddedPostgresWithTheCLI(t *testing.T) {
	data := e2etest.ReachableDir(t)
	admin, bob := t.TempDir(), t.TempDir()

	p := e2etest.StartServe(t, data, nil)
	m := e2etest.CodeLine.FindStringSubmatch(p.Stdout.String())
	require.NotNil(t, m, "the first start prints the first-admin code\nstdout: %s", p.Stdout.String())
	firstCode := m[1]
	require.NotContains(t, p.Stderr.String(), firstCode, "the code is printed, never logged")

	out := e2etest.MustCLI(t, p, admin, "admin password 123\n", "signup", "--code", firstCode, "--email", "ada@example.com", "--name", "Ada")
	require.Contains(t, out, "Account created")
	e2etest.MustCLI(t, p, admin, "admin password 123\n", "login", "--email", "ada@example.com")
	fi, err := os.Stat(filepath.Join(admin, "credentials.json"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "credentials are private")
	require.Contains(t, e2etest.MustCLI(t, p, admin, "", "me"), "license: unlimited")

	out = e2etest.MustCLI(t, p, admin, "", "admin", "invite", "--template", "demo", "--note", "for bob")
	m = e2etest.CodeLine.FindStringSubmatch(out)
	require.NotNil(t, m, out)
	bobCode := m[1]
	e2etest.MustCLI(t, p, bob, "bobs long password\n", "signup", "--code", bobCode, "--email", "bob@example.com", "--name", "Bob")
	me := e2etest.MustCLI(t, p, bob, "", "me")
	require.Contains(t, me, "demo: 100 VUs per run")
	require.Contains(t, me, "using: namespaces 0 of 5, pending versions 0 of 5, storage 0 B of 256.0 MiB, targets 0 of 20, tests 0 of 200", "the quotas, from the server's defaults")

	// A spent code: a clear error, non-zero exit.
	_, errOut, err := e2etest.CLI(t, p, t.TempDir(), "eves long password\n", "signup", "--code", bobCode, "--email", "eve@example.com", "--name", "Eve")
	require.Error(t, err)
	require.Contains(t, errOut, "409 Conflict: this invitation code has already been used")

	// Bob is no admin.
	_, errOut, err = e2etest.CLI(t, p, bob, "", "admin", "users")
	require.Error(t, err)
	require.Contains(t, errOut, "403")

	users := e2etest.MustCLI(t, p, admin, "", "admin", "users")
	require.Contains(t, users, "ada@example.com")
	require.Contains(t, users, "bob@example.com")
	// One user, read as the admin's API answers it (with their activity, which it does not show).
	read := false
	for _, line := range strings.Split(users, "\n") {
		if strings.Contains(line, "bob@example.com") {
			require.Contains(t, e2etest.MustCLI(t, p, admin, "", "admin", "user", strings.Fields(line)[0]), "Bob <bob@example.com>, user, active")
			read = true
		}
	}
	require.True(t, read, "bob's line in %s", users)

	token := strings.TrimSpace(e2etest.MustCLI(t, p, admin, "", "tokens", "create", "--name", "ci", "--scopes", "read"))
	require.Regexp(t, `^brg_pat_`, token)
	req, _ := http.NewRequest("GET", p.URL+"/v1/me", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, string(body))
	require.Contains(t, e2etest.MustCLI(t, p, admin, "", "tokens", "list"), "ci")

	// The audit log: the admin reads who did what, failures too (Eve's spent code); Bob what he
	// did, and nobody else's; the export is a JSON object a line.
	audit := e2etest.MustCLI(t, p, admin, "", "audit", "--action", "invitation.use", "--outcome", "failure", "--since", "1h")
	require.Contains(t, audit, "(anonymous) eve@example.com")
	require.Contains(t, audit, "failure 409 this invitation code has already been used")
	require.Contains(t, e2etest.MustCLI(t, p, admin, "", "audit", "--action", "token"), "token.create")
	bobs := e2etest.MustCLI(t, p, bob, "", "audit")
	require.Contains(t, bobs, "invitation.use")
	require.NotContains(t, bobs, "token.create")
	lines := strings.Split(strings.TrimSpace(e2etest.MustCLI(t, p, admin, "", "audit", "--json-lines")), "\n")
	require.Greater(t, len(lines), 5)
	for _, l := range lines {
		require.True(t, json.Valid([]byte(l)), l)
	}

	// With database access, an admin can issue codes while the server runs.
	out = e2etest.MustCLI(t, p, admin, "", "admin", "invite", "--local", "--data-dir", data, "--role", "admin")
	require.Regexp(t, e2etest.CodeLine, out)

	p.Stop(t)
	require.NotContains(t, p.Stderr.String(), "level=ERROR")

	// Restarted, the data is there and no new first-admin code is printed.
	p2 := e2etest.StartServe(t, data, nil)
	require.NotRegexp(t, e2etest.CodeLine, p2.Stdout.String())
	e2etest.MustCLI(t, p2, admin, "admin password 123\n", "login", "--email", "ada@example.com")
	require.Contains(t, e2etest.MustCLI(t, p2, admin, "", "admin", "invitations"), "for bob")
	// Stored tokens are never sent to another server.
	other := *p2
	other.URL = "http://127.0.0.1:1"
	_, errOut, err = e2etest.CLI(t, &other, admin, "", "me")
	require.Error(t, err)
	require.Contains(t, errOut, "signed in to "+p2.URL+", not http://127.0.0.1:1")

	// A password change lists the live personal tokens and revokes them when asked; every
	// session is signed out, so the CLI signs in again with the new password.
	out, errOut, err = e2etest.CLI(t, p2, admin, "admin password 123\nadmin password 456\n", "password", "--revoke-tokens")
	require.NoError(t, err, "stderr: %s", errOut)
	require.Contains(t, out, "ci", "the live tokens are listed")
	require.Contains(t, out, "your personal API tokens were revoked")
	req, _ = http.NewRequest("GET", p2.URL+"/v1/me", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusUnauthorized, res.StatusCode, "the token went with the old password")
	_, _, err = e2etest.CLI(t, p2, admin, "", "me")
	require.Error(t, err, "signed out")
	e2etest.MustCLI(t, p2, admin, "admin password 456\n", "login", "--email", "ada@example.com")

	e2etest.MustCLI(t, p2, admin, "", "logout")
	_, errOut, err = e2etest.CLI(t, p2, admin, "", "me")
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
	data := e2etest.ReachableDir(t)
	home := filepath.Join(data, "home")
	require.NoError(t, os.MkdirAll(home, 0o755))
	require.NoError(t, os.Chown(data, uid, gid))
	require.NoError(t, os.Chown(home, uid, gid))
	// nobody's own HOME: its download cache, separate from root's.
	p := e2etest.StartServe(t, filepath.Join(data, "srv"), &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, "HOME="+home)
	require.Regexp(t, e2etest.CodeLine, p.Stdout.String())
	ps, err := exec.Command("ps", "-o", "user=", "-p", strconv.Itoa(p.Cmd.Process.Pid)).Output()
	if err == nil {
		require.Equal(t, "nobody", strings.TrimSpace(string(ps)))
	}
	p.Stop(t)
}
