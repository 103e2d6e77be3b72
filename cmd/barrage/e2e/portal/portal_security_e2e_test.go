package portal_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/e2etest"
	"github.com/barrage-load/barrage/internal/portal/portaltest"
)

// What the portal must refuse, in the browser: its session's tokens out of a script's reach,
// another site's forms and scripts, a request without the CSRF token, a script planted in any
// text it shows, and another user's things.

// xssStrings would run a script wherever a page inserted them as HTML, in text or in an
// attribute.
var xssStrings = []string{
	`<img src=x onerror="window.__xss=1">`,
	`<script>window.__xss=1</script>`,
	`"><svg onload="window.__xss=1">`,
}

// shown is a string a user controls and a page of the portal shows: how to plant it for the
// user signed in to the browser, and the page that shows it. Tests, traces and runs plant
// theirs in one script, shown on several pages ("what users wrote in a test").
type shown struct {
	what  string
	plant func(t *testing.T, b *portaltest.Browser, s string)
	page  string
}

func TestPortalRefusesWhatItMust(t *testing.T) {
	s := e2etest.NewPortalUser(t)
	const email, password = "vic@example.com", "victims long password"
	vic := t.TempDir()
	e2etest.MustCLI(t, s.Server, vic, password+"\n", "signup", "--code", s.Code, "--email", email, "--name", "Vic")
	e2etest.MustCLI(t, s.Server, vic, password+"\n", "login", "--email", email)
	bearer := strings.TrimSpace(e2etest.MustCLI(t, s.Server, vic, "", "tokens", "create", "--name", "cli", "--scopes", "read"))

	t.Run("the session's cookies are out of the page's scripts' reach", func(t *testing.T) {
		b := portaltest.New(t, s.Server.URL)
		e2etest.SignIn(b, email, password)
		jar := portaltest.Eval[string](b, `document.cookie`)
		require.Contains(t, jar, "barrage_csrf=")
		require.NotContains(t, jar, "barrage_access")
		require.NotContains(t, jar, "barrage_refresh")
		// The browser has them, and sends them: the session works.
		httpOnly := map[string]bool{}
		for _, c := range b.Cookies("/v1/auth/session") {
			httpOnly[c.Name] = c.HTTPOnly
		}
		require.Equal(t, map[string]bool{"barrage_access": true, "barrage_refresh": true, "barrage_csrf": false}, httpOnly)
		status, body := b.Fetch("GET", "/v1/me", "", false)
		require.Equal(t, http.StatusOK, status, body)
	})

	t.Run("another site's form and script change nothing", func(t *testing.T) {
		b := portaltest.New(t, s.Server.URL)
		e2etest.SignIn(b, email, password)
		before := tokenNames(t, s.Server, bearer)
		evil := attackerSite(t, s.Server.URL, "127.0.0.1:0")
		_, evilPort, err := net.SplitHostPort(strings.TrimPrefix(evil, "http://"))
		require.NoError(t, err)
		for _, site := range []struct {
			name, url string
			want      int
		}{
			// Same site (an address is its own site, whatever the port), another origin: the
			// SameSite cookies go with the request, and the server refuses its Origin.
			{"127.0.0.1, another port", evil, http.StatusForbidden},
			// Other sites: the browser does not send the SameSite=Strict cookies at all.
			{"127.0.0.2", attackerSite(t, s.Server.URL, "127.0.0.2:0"), http.StatusUnauthorized},
			{"localhost", "http://localhost:" + evilPort, http.StatusUnauthorized},
		} {
			target := s.Server.URL + "/v1/tokens"
			b.Go(site.url + "/form")
			require.Equal(t, site.want, b.WaitAnswer("POST", target), "a form posted from %s", site.name)

			b.Go(site.url + "/")
			require.Equal(t, "opaque", portaltest.Eval[string](b, fmt.Sprintf(`fetch(%q, { method: "POST", mode: "no-cors", credentials: "include",
				headers: { "Content-Type": "text/plain" }, body: '{"name":"fetched","scopes":["read","write"]}' }).then((r) => r.type)`, target)))
			require.Equal(t, site.want, b.WaitAnswer("POST", target), "a fetch from %s", site.name)

			// A JSON body needs the server's consent (CORS), which it never gives.
			cors := b.Expect("CORS policy")
			require.Equal(t, "refused", portaltest.Eval[string](b, fmt.Sprintf(`fetch(%q, { method: "POST", credentials: "include",
				headers: { "Content-Type": "application/json" }, body: '{"name":"cors","scopes":["read"]}' }).then(() => "sent", () => "refused")`, target)))
			cors.Wait()
		}
		require.Equal(t, before, tokenNames(t, s.Server, bearer), "no token was made")
	})

	t.Run("a request without the CSRF token is refused", func(t *testing.T) {
		b := portaltest.New(t, s.Server.URL)
		e2etest.SignIn(b, email, password)
		b.Go("/tokens")
		b.WaitTitle("API tokens · Barrage")
		before := tokenNames(t, s.Server, bearer)
		status, body := b.Fetch("POST", "/v1/tokens", `{"name":"no csrf","scopes":["read"]}`, false)
		require.Equal(t, http.StatusForbidden, status, body)
		require.Equal(t, before, tokenNames(t, s.Server, bearer))
		// The same request with the token is the portal's own, and is made.
		status, body = b.Fetch("POST", "/v1/tokens", `{"name":"with csrf","scopes":["read"]}`, true)
		require.Equal(t, http.StatusCreated, status, body)
		require.Contains(t, tokenNames(t, s.Server, bearer), "with csrf")
	})

	t.Run("a script in any text the portal shows does not run", func(t *testing.T) {
		b := portaltest.New(t, s.Server.URL)
		e2etest.SignIn(b, email, password)
		users := 0
		for _, row := range []shown{
			{"the name given at sign-up", func(t *testing.T, b *portaltest.Browser, name string) {
				users++
				email := fmt.Sprintf("xss%d@example.com", users)
				e2etest.MustCLI(t, s.Server, t.TempDir(), password+"\n", "signup", "--code", e2etest.Invite(t, s.Server, s.Admin), "--email", email, "--name", name)
				b.Click("Sign out")
				b.WaitTitle("Sign in · Barrage")
				e2etest.SignIn(b, email, password)
			}, "/"},
			{"a personal API token's name", func(t *testing.T, b *portaltest.Browser, name string) {
				body, _ := json.Marshal(map[string]any{"name": name, "scopes": []string{"read"}})
				status, answer := b.Fetch("POST", "/v1/tokens", string(body), true)
				require.Equal(t, http.StatusCreated, status, answer)
			}, "/tokens"},
			{"the user's name, changed", func(t *testing.T, b *portaltest.Browser, name string) {
				body, _ := json.Marshal(map[string]any{"name": name})
				status, answer := b.Fetch("PATCH", "/v1/me", string(body), true)
				require.Equal(t, http.StatusOK, status, answer)
			}, "/password"},
		} {
			for _, x := range xssStrings {
				x += " · " + row.what // one of its kind on the page
				row.plant(t, b, x)
				b.Go(row.page)
				shownAsText(t, b, x, row.page)
			}
		}
		b.Inspect("xss")

		// And were a page to insert one as HTML, its Content-Security-Policy would not run it:
		// the same HTML runs on a page without one.
		b.Go("/")
		b.WaitTitle("Tests · Barrage")
		csp := b.Expect("Content Security Policy")
		const inject = `document.body.insertAdjacentHTML("beforeend", '<img src="data:," onerror="window.__xssImg=1">');
			const s = document.createElement("script"); s.textContent = "window.__xssScript=1"; document.body.append(s)`
		portaltest.Eval[struct{}](b, inject)
		csp.Wait()
		require.True(t, portaltest.Eval[bool](b, `window.__xssImg === undefined && window.__xssScript === undefined`))
		b.Go(attackerSite(t, s.Server.URL, "127.0.0.1:0") + "/")
		portaltest.Eval[struct{}](b, inject)
		b.WaitFor(`window.__xssImg === 1 && window.__xssScript === 1`)
	})

	t.Run("a script in what users wrote in a test, its trace and its runs does not run", func(t *testing.T) {
		// A target that answers what a page would run, in a header and in its body.
		target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Echo", xssStrings[2])
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, xssStrings[1]+" · response")
		}))
		defer target.Close()
		e2etest.OwnAgent(t, s.Server, vic, "vics laptop")
		name := func(i int, what string) string { return xssStrings[i] + " · " + what }
		quoted := func(v string) string { q, _ := json.Marshal(v); return string(q) }
		dir := t.TempDir()
		path := filepath.Join(dir, "planted.yaml")
		require.NoError(t, os.WriteFile(path, []byte(`version: 1
name: `+quoted(name(0, "test"))+`
base_url: `+target.URL+`
session:
  groups:
    - name: `+quoted(name(1, "group"))+`
      requests:
        - name: `+quoted(name(2, "request"))+`
          method: POST
          url: /
          headers: { X-Planted: `+quoted(name(0, "header"))+` }
          body: { json: { planted: `+quoted(name(1, "body"))+` } }
          assert:
            - body_contains: `+quoted(name(0, "missing"))+`
load:
  vus: 1
  iterations: 3
`), 0o644))
		test := strings.TrimSpace(e2etest.MustCLI(t, s.Server, vic, "", "tests", "push", path))
		e2etest.MustCLI(t, s.Server, vic, "", "runs", "start", "--test", test, "--watch") // its check fails: an error sample
		var runs struct{ Items []struct{ ID string } }
		require.Equal(t, http.StatusOK, e2etest.APIGet(t, s.Server, bearer, "/v1/runs?test_id="+test, &runs))
		require.Len(t, runs.Items, 1)
		run := runs.Items[0].ID

		b := portaltest.New(t, s.Server.URL)
		e2etest.SignIn(b, email, password)
		for _, page := range []struct {
			path  string
			shows []string
		}{
			{"/tests", []string{name(0, "test")}},
			{"/tests/" + test, []string{name(0, "test")}},
			{"/tests/" + test + "/wizard", nil}, // values of fields: checked as no script ran
			{"/runs", []string{name(0, "test")}},
			{"/runs/" + run, []string{name(0, "test"), name(2, "request"), name(1, "group"), name(0, "missing")}},
		} {
			b.Go(page.path)
			if page.path == "/runs/"+run {
				b.WaitText("HTML report")
			}
			for _, x := range page.shows {
				shownAsText(t, b, x, page.path)
			}
			shownAsText(t, b, "", page.path)
		}
		b.Go("/tests/" + test + "/debug")
		b.Click("Run one iteration")
		for _, x := range []string{name(2, "request"), name(0, "header"), name(1, "body"), xssStrings[2], name(1, "response")} {
			shownAsText(t, b, x, "the debug page")
		}
		b.Inspect("planted")
	})

	t.Run("another user's things are not found", func(t *testing.T) {
		mallory := t.TempDir()
		e2etest.MustCLI(t, s.Server, mallory, "mallorys long password\n", "signup", "--code", e2etest.Invite(t, s.Server, s.Admin), "--email", "mallory@example.com", "--name", "Mallory")
		e2etest.MustCLI(t, s.Server, mallory, "mallorys long password\n", "login", "--email", "mallory@example.com")
		malloryBearer := strings.TrimSpace(e2etest.MustCLI(t, s.Server, mallory, "", "tokens", "create", "--name", "mallorys", "--scopes", "read"))
		var tokens struct{ Items []struct{ ID, Name string } }
		require.Equal(t, http.StatusOK, e2etest.APIGet(t, s.Server, malloryBearer, "/v1/tokens", &tokens))
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "users.csv"), []byte("user\nann\n"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "mallorys.yaml"), []byte(`version: 1
name: mallorys
base_url: http://127.0.0.1:1
variables:
  data:
    - { file: users.csv }
session:
  groups:
    - name: home
      requests:
        - { name: home, url: "/?user=${user}" }
load:
  vus: 1
  duration: 1s
`), 0o644))
		test := strings.TrimSpace(e2etest.MustCLI(t, s.Server, mallory, "", "tests", "push", filepath.Join(dir, "mallorys.yaml")))
		e2etest.OwnAgent(t, s.Server, mallory, "mallorys laptop")
		out, errOut, err := e2etest.CLI(t, s.Server, mallory, "", "runs", "start", "--test", test, "--watch") // nothing listens at its target: a run all the same
		t.Logf("her run: %v\n%s%s", err, out, errOut)
		var runs struct{ Items []struct{ ID string } }
		require.Equal(t, http.StatusOK, e2etest.APIGet(t, s.Server, malloryBearer, "/v1/runs?test_id="+test, &runs))
		require.Len(t, runs.Items, 1)
		run := runs.Items[0].ID

		b := portaltest.New(t, s.Server.URL)
		e2etest.SignIn(b, email, password)
		// Each is Mallory's, and hers to reach: the same request of hers is answered.
		for _, r := range []struct{ what, method, path string }{
			{"her token, revoked", "DELETE", "/v1/tokens/" + tokens.Items[0].ID},
			{"her test", "GET", "/v1/tests/" + test},
			{"her test's file", "GET", "/v1/tests/" + test + "/files/users.csv"},
			{"her run", "GET", "/v1/runs/" + run},
			{"her run's results", "GET", "/v1/runs/" + run + "/summary"},
			{"her run, canceled", "POST", "/v1/runs/" + run + "/cancel"},
			{"her test, deleted", "DELETE", "/v1/tests/" + test},
		} {
			status, body := b.Fetch(r.method, r.path, "", true)
			require.Equal(t, http.StatusNotFound, status, "%s: %s", r.what, body)
			if r.method == "GET" {
				got, body := e2etest.APIRead(t, s.Server, malloryBearer, r.path)
				require.Equal(t, http.StatusOK, got, "%s, for her: %s", r.what, body)
			}
		}
		// Nor do the portal's pages show them.
		for _, page := range []string{"/tests/" + test, "/runs/" + run} {
			b.Go(page)
			b.WaitFor(`document.querySelector("[role=alert]")`)
			require.Contains(t, b.Text(), "not found", page)
			require.NotContains(t, b.Text(), "mallorys", page)
		}
		require.Contains(t, tokenNames(t, s.Server, malloryBearer), "mallorys", "her token is still hers")
		require.Equal(t, http.StatusOK, e2etest.APIGet(t, s.Server, malloryBearer, "/v1/tests/"+test, nil), "her test is still hers")
	})
}

// shownAsText waits until the page shows x as text, literally (any text when x is empty), and
// requires that no script a user planted ran: none set window.__xss, no element has an
// onerror or onload handler, and the page's scripts are the portal's own.
func shownAsText(t *testing.T, b *portaltest.Browser, x, where string) {
	t.Helper()
	b.WaitText(x)
	require.True(t, portaltest.Eval[bool](b, `window.__xss === undefined && !document.querySelector("[onerror], [onload]")
		&& [...document.scripts].every((s) => new URL(s.src).pathname.startsWith("/assets/"))`), "%s on %s", x, where)
}

// attackerSite serves, at addr, another site's pages: /form posts a forged JSON body (a
// text/plain form whose field name and value make JSON) to server's /v1/tokens as soon as it
// loads; / is a page to run scripts on.
func attackerSite(t *testing.T, server, addr string) string {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.URL.Path != "/form" {
			fmt.Fprint(w, `<!doctype html><html lang="en"><title>Another site</title><p>Nothing to see.</p></html>`)
			return
		}
		fmt.Fprintf(w, `<!doctype html><html lang="en"><title>Win a prize</title>
<form method="POST" action="%s/v1/tokens" enctype="text/plain">
<input type="hidden" name='{"scopes":["read","write"],"name":"forged' value='x"}'>
</form><script>document.forms[0].submit()</script></html>`, server)
	}))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}
