package portal_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/e2etest"
	"github.com/barrage-load/barrage/internal/portal/portaltest"
)

// The portal in a real Chromium against a real `barrage serve`: the pages as a person goes
// through them, on a laptop's screen and a phone's, with axe-core on each; and what the portal
// must refuse (portal_security_e2e_test.go).

func TestPortalAccountPagesInChromium(t *testing.T) {
	s := e2etest.NewPortalUser(t)
	b := portaltest.New(t, s.Server.URL)

	// Signed out, the portal's first page asks to sign in.
	b.Go("/")
	b.WaitTitle("Sign in · Barrage")
	b.WaitText("Sign in to Barrage")
	b.Inspect("signin")

	b.Follow("Sign up")
	b.WaitTitle("Sign up · Barrage")
	b.Inspect("signup")
	e2etest.SignUp(b, s.Code, "grace@example.com", "Grace Hopper", "first long password")

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
	require.Equal(t, http.StatusOK, e2etest.APIGet(t, s.Server, token, "/v1/me", &me))
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
func tokenNames(t *testing.T, p *e2etest.Server, bearer string) []string {
	t.Helper()
	var page struct{ Items []struct{ Name string } }
	require.Equal(t, http.StatusOK, e2etest.APIGet(t, p, bearer, "/v1/tokens", &page))
	names := make([]string, 0, len(page.Items))
	for _, it := range page.Items {
		names = append(names, it.Name)
	}
	return names
}
