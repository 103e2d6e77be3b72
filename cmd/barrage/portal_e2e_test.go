package main_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/portal/portaltest"
)

// The portal in a real Chromium against a real `barrage serve`: the pages as a person goes
// through them, on a laptop's screen and a phone's, with axe-core on each; and what the portal
// must refuse (portal_security_e2e_test.go).

// portalUser is a server (serve's environment extended by env) with an admin signed in by the
// CLI, and an invitation code (demo license) for the person the test signs up in the browser.
type portalUser struct {
	p     *serveProc
	admin string // the admin's CLI config folder
	code  string
}

func newPortalUser(t *testing.T, env ...string) portalUser {
	t.Helper()
	p := startServe(t, reachableDir(t), nil, env...)
	admin := t.TempDir()
	m := codeLine.FindStringSubmatch(p.stdout.String())
	require.NotNil(t, m, "the first start prints the first-admin code\nstdout: %s", p.stdout.String())
	mustCLI(t, p, admin, "admin password 123\n", "signup", "--code", m[1], "--email", "ada@example.com", "--name", "Ada")
	mustCLI(t, p, admin, "admin password 123\n", "login", "--email", "ada@example.com")
	return portalUser{p: p, admin: admin, code: invite(t, p, admin)}
}

// invite is a new invitation code for a user with the demo license.
func invite(t *testing.T, p *serveProc, admin string) string {
	t.Helper()
	m := codeLine.FindStringSubmatch(mustCLI(t, p, admin, "", "admin", "invite", "--template", "demo"))
	require.NotNil(t, m)
	return m[1]
}

// ownAgent registers an agent named name for the user signed in to the CLI in cfg, starts it,
// and waits until the server sees it online.
func ownAgent(t *testing.T, p *serveProc, cfg, name string) *agentProc {
	t.Helper()
	a := startAgent(t, p, strings.TrimSpace(mustCLI(t, p, cfg, "", "agents", "create", name)))
	eventually(t, 30*time.Second, name+" online", func() bool {
		return regexp.MustCompile(`(?m)\s` + regexp.QuoteMeta(name) + `\s.*\sonline\s`).MatchString(mustCLI(t, p, cfg, "", "agents", "list"))
	})
	return a
}

// signUp fills the sign-up page, open in b, and sends it.
func signUp(b *portaltest.Browser, code, email, name, password string) {
	b.Fill("Invitation code", code)
	b.Fill("Email", email)
	b.Fill("Name", name)
	b.Fill("Password", password)
	b.Click("Sign up")
}

// signIn signs in through the sign-in page, signed out, and waits for the tests, the first page.
func signIn(b *portaltest.Browser, email, password string) {
	b.Go("/signin")
	b.WaitTitle("Sign in · Barrage")
	b.Fill("Email", email)
	b.Fill("Password", password)
	b.Click("Sign in")
	b.WaitTitle("Tests · Barrage")
}

func TestPortalAccountPagesInChromium(t *testing.T) {
	s := newPortalUser(t)
	b := portaltest.New(t, s.p.url)

	// Signed out, the portal's first page asks to sign in.
	b.Go("/")
	b.WaitTitle("Sign in · Barrage")
	b.WaitText("Sign in to Barrage")
	b.Inspect("signin")

	b.Follow("Sign up")
	b.WaitTitle("Sign up · Barrage")
	b.Inspect("signup")
	signUp(b, s.code, "grace@example.com", "Grace Hopper", "first long password")

	// Signed in: the tests (none yet); the license the code gave, what is in use of it, and
	// who is signed in.
	b.WaitTitle("Tests · Barrage")
	b.WaitText("No tests yet.")
	b.Follow("License")
	b.WaitTitle("License · Barrage")
	b.WaitText("Virtual users per run")
	text := b.Text()
	require.Contains(t, text, "demo")
	require.Contains(t, text, "100", "the demo license's VUs")
	require.Contains(t, text, "Grace Hopper")
	b.Inspect("license")

	// A token, shown once: it works on the API, and is gone from the page once it is left.
	b.Follow("API tokens")
	b.WaitTitle("API tokens · Barrage")
	b.WaitText("No tokens.")
	b.Fill("Name", "laptop")
	b.Click("Create a token")
	b.WaitText("shown this once")
	token := b.Value("The new token")
	require.True(t, strings.HasPrefix(token, "brg_pat_"), token)
	var me struct{ Email string }
	require.Equal(t, http.StatusOK, apiGet(t, s.p, token, "/v1/me", &me))
	require.Equal(t, "grace@example.com", me.Email)
	b.Inspect("tokens")
	b.Go("/tokens")
	b.WaitFor(`document.querySelector('button[aria-label="Revoke laptop"]')`)
	require.NotContains(t, b.Text(), "shown this once")
	require.True(t, portaltest.Eval[bool](b, `document.querySelector('[aria-label="The new token"]') === null`), "the token is shown once")

	// A new password signs every session out.
	b.Follow("Password")
	b.WaitTitle("Password · Barrage")
	b.Inspect("password")
	b.Fill("Current password", "first long password")
	b.Fill("New password", "second long password")
	b.Click("Change the password")
	b.WaitTitle("Sign in · Barrage")

	// The old password is refused, on the page.
	b.Fill("Email", "grace@example.com")
	b.Fill("Password", "first long password")
	b.Click("Sign in")
	b.WaitFor(`document.querySelector('[role=alert]')`)
	b.Inspect("signin-refused")

	// The new one signs in, by the keyboard alone: Tab to each field, Enter to submit.
	b.Go("/signin")
	b.WaitTitle("Sign in · Barrage")
	b.Keys(kb.Tab)
	require.Equal(t, "Email", b.Focused())
	b.Keys("grace@example.com" + kb.Tab)
	require.Equal(t, "Password", b.Focused())
	b.Keys("second long password" + kb.Enter)
	b.WaitTitle("Tests · Barrage")
	b.WaitText("Grace Hopper")

	// Signing out ends the session: the API no longer knows the page.
	b.Click("Sign out")
	b.WaitTitle("Sign in · Barrage")
	status, _ := b.Fetch("GET", "/v1/me", "", false)
	require.Equal(t, http.StatusUnauthorized, status)
}

// tokenNames are the names of the user's personal API tokens, as the API lists them.
func tokenNames(t *testing.T, p *serveProc, bearer string) []string {
	t.Helper()
	var page struct{ Items []struct{ Name string } }
	require.Equal(t, http.StatusOK, apiGet(t, p, bearer, "/v1/tokens", &page))
	names := make([]string, 0, len(page.Items))
	for _, it := range page.Items {
		names = append(names, it.Name)
	}
	return names
}
