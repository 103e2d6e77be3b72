package e2etest

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/portal/portaltest"
)

// PortalUser is a server (serve's environment extended by env) with an admin signed in by the
// CLI, and an invitation code (demo license) for the person the test signs up in the browser.
type PortalUser struct {
	Server *Server
	Admin  string // the admin's CLI config folder
	Code   string
}

// NewPortalUser starts a server, signs its first admin up and in, and invites the demo user.
func NewPortalUser(t testing.TB, env ...string) PortalUser {
	t.Helper()
	p := StartServe(t, ReachableDir(t), nil, env...)
	admin := t.TempDir()
	SignUpFirstAdmin(t, p, admin, "ada@example.com", "Ada")
	return PortalUser{Server: p, Admin: admin, Code: Invite(t, p, admin)}
}

// Invite is a new invitation code for a user with the demo license.
func Invite(t testing.TB, p *Server, admin string) string {
	t.Helper()
	m := CodeLine.FindStringSubmatch(MustCLI(t, p, admin, "", "admin", "invite", "--template", "demo"))
	require.NotNil(t, m)
	return m[1]
}

// OwnAgent registers an agent named name for the user signed in to the CLI in cfg, starts it,
// and waits until the server sees it online.
func OwnAgent(t testing.TB, p *Server, cfg, name string) *Agent {
	t.Helper()
	a := StartAgent(t, p, strings.TrimSpace(MustCLI(t, p, cfg, "", "agents", "create", name)))
	Eventually(t, 30*time.Second, name+" online", func() bool {
		return regexp.MustCompile(`(?m)\s` + regexp.QuoteMeta(name) + `\s.*\sonline\s`).MatchString(MustCLI(t, p, cfg, "", "agents", "list"))
	})
	return a
}

// SignUp fills the sign-up page, open in b, and sends it.
func SignUp(b *portaltest.Browser, code, email, name, password string) {
	b.Fill("Invitation code", code)
	b.Fill("Email", email)
	b.Fill("Name", name)
	b.Fill("Password", password)
	b.Click("Sign up")
}

// SignIn signs in through the sign-in page, signed out, and waits for the tests, the first page.
func SignIn(b *portaltest.Browser, email, password string) {
	b.Go("/signin")
	b.WaitTitle("Sign in · Barrage")
	b.Fill("Email", email)
	b.Fill("Password", password)
	b.Click("Sign in")
	b.WaitTitle("Tests · Barrage")
}
