package portal_test

import (
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/e2etest"
	"github.com/barrage-load/barrage/internal/portal/portaltest"
)

// An admin issues an invitation in the portal (its code shown once) and a new user signs up
// with it in the portal; the admin finds the user, reads their page, disables and enables them
// and changes their license; registers a shared agent (its token shown once) that then runs,
// pings it and retires it; reserves a namespace; reads the targets the operator opened. A user
// who is not an admin is shown no admin page, and the API refuses them its data.
func TestTheAdminConsoleInChromium(t *testing.T) {
	s := e2etest.NewPortalUser(t)
	p := s.Server
	ab := portaltest.New(t, p.URL)
	e2etest.SignIn(ab, "ada@example.com", e2etest.AdminPassword)

	// An invitation, issued with custom limits: its code shown once, with a copy button.
	ab.Follow("Admin")
	ab.WaitTitle("Invitations · Barrage")
	ab.Choose("License", "Custom limits")
	ab.Fill("Virtual users per run", "40")
	ab.Fill("Longest run (minutes)", "10")
	ab.Fill("Runs at a time", "1")
	ab.Fill("Valid for (days)", "30")
	ab.Fill("Note", "for Linus")
	ab.Click("Issue the invitation")
	ab.WaitText("The invitation code, shown this once")
	code := ab.Value("The new invitation code")
	require.NotEmpty(t, code)
	ab.Inspect("admin-invitations")

	// A new user signs up with it, in the portal.
	ub := portaltest.New(t, p.URL)
	ub.Go("/signup")
	ub.WaitTitle("Sign up · Barrage")
	e2etest.SignUp(ub, code, "linus@example.com", "Linus", "linus long password")
	ub.WaitTitle("Tests · Barrage")

	// The invitation is spent, by him. Another, unused, is revoked.
	ab.Go("/admin/invitations")
	ab.WaitText("linus@example.com")
	require.Contains(t, ab.Text(), "spent")
	ab.Fill("Note", "for nobody")
	ab.Click("Issue the invitation")
	ab.WaitText("The invitation code, shown this once")
	unused := ab.Value("The new invitation code")
	ab.Click("Revoke the invitation “for nobody”")
	ab.WaitFor(`[...document.querySelectorAll("tbody tr")].some((r) => r.innerText.includes("for nobody") && r.innerText.includes("revoked"))`)
	nb := portaltest.New(t, p.URL)
	nb.Go("/signup")
	nb.WaitTitle("Sign up · Barrage")
	e2etest.SignUp(nb, unused, "nobody@example.com", "Nobody", "nobodys long password")
	nb.WaitText("this invitation code has been revoked")

	// A user who is not an admin: no admin section nor page, and the API refuses him their data.
	require.NotContains(t, ub.Text(), "Admin")
	for _, page := range []string{"/admin", "/admin/invitations", "/admin/users", "/admin/agents", "/admin/plugins", "/admin/targets"} {
		ub.Go(page)
		ub.WaitTitle("Admins only · Barrage")
		require.NotContains(t, ub.Text(), "ada@example.com", page)
		require.NotContains(t, ub.Text(), "for Linus", page)
	}
	ub.Inspect("admin-refused")
	for _, route := range []string{"/v1/admin/invitations", "/v1/admin/users", "/v1/admin/agents", "/v1/admin/plugin-versions", "/v1/admin/namespaces", "/v1/admin/targets"} {
		status, body := ub.Fetch("GET", route, "", false)
		require.Equal(t, http.StatusForbidden, status, route)
		require.Contains(t, body, "this route is for admins", route)
	}
	status, body := ub.Fetch("POST", "/v1/admin/invitations", `{"note":"mine"}`, true)
	require.Equal(t, http.StatusForbidden, status, body)

	// The admin finds him, reads his page, disables him (his session ends), enables him, and
	// gives him the demo license.
	ab.Follow("Users")
	ab.WaitTitle("Users · Barrage")
	ab.Fill("Email or name", "LINUS")
	ab.Click("Find")
	ab.WaitFor(`location.search === "?q=LINUS" && !document.body.innerText.includes("ada@example.com")`)
	require.Contains(t, ab.Text(), "linus@example.com")
	ab.Follow("linus@example.com")
	ab.WaitTitle("linus@example.com · Barrage")
	ab.WaitText("Personal API tokens")
	text := ab.Text()
	require.Contains(t, text, "40 VUs")
	require.Regexp(t, `Runs\s+0`, text)
	ab.Inspect("admin-user")
	ab.Click("Disable the account")
	ab.WaitText("Enable the account")
	status, _ = ub.Fetch("GET", "/v1/me", "", false)
	require.Equal(t, http.StatusUnauthorized, status, "disabled: his session is gone")
	ab.Click("Enable the account")
	ab.WaitText("Disable the account")
	ab.Choose("Start from", "The demo template")
	ab.Click("Save the license")
	ab.WaitText("demo: 100 VUs")

	// A shared agent: registered, its token shown once; it runs and says what it is; pinged;
	// retired.
	ab.Follow("Shared agents")
	ab.WaitTitle("Agents · Barrage")
	ab.Fill("Name", "edge one")
	ab.Fill("Virtual users per job", "200")
	ab.Click("Register the agent")
	ab.WaitText("The agent token of edge one, shown this once")
	token := ab.Value("The new agent token")
	e2etest.StartAgent(t, p, token)
	e2etest.Eventually(t, 30*time.Second, "edge one online", func() bool {
		return regexp.MustCompile(`(?m)\sedge one\s.*\sonline\s`).MatchString(e2etest.MustCLI(t, p, s.Admin, "", "agents", "list"))
	})
	ab.Go("/admin/agents")
	row := `[...document.querySelectorAll("tbody tr")].find((r) => r.innerText.startsWith("edge one"))`
	ab.WaitFor(row)
	require.Regexp(t, `edge one\s+shared\s+online\s+\S+ \(protocol \d+\)`, portaltest.Eval[string](ab, row+`.innerText`))
	ab.Click("Ping edge one")
	ab.WaitText("answered in")
	ab.Inspect("admin-agents")
	ab.Click("Retire edge one")
	ab.WaitFor(`!document.body.innerText.includes("edge one")`)

	// A namespace reserved for the service.
	ab.Follow("Plugin review")
	ab.WaitText("No version waits for review.")
	ab.Fill("Namespace to reserve", "tools")
	ab.Click("Reserve it")
	ab.WaitFor(`[...document.querySelectorAll("ul.plain li")].some((li) => li.innerText.startsWith("tools"))`)
	ab.Inspect("admin-review")

	// The targets the operator opened: the demo agent's shop, and the cap per address.
	ab.Follow("Targets")
	ab.WaitTitle("Targets · Barrage")
	ab.WaitText("Virtual users per address")
	ab.Inspect("admin-targets")
	require.Contains(t, ab.Text(), "Opened to everyone")
}
