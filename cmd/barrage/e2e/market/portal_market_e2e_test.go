package market_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/e2etest"
	"github.com/barrage-load/barrage/internal/portal/portaltest"
)

// hostileREADME is a README that would run a script, load a tracker or send a reader to a
// script URL, were the portal to render it as HTML.
const hostileREADME = "# random-data\n\n" +
	"Makes up test data.\n\n" +
	"<script>window.__xss = 1</script>\n\n" +
	`Inline <img src=x onerror="window.__xss = 2"> and <b onclick="window.__xss = 3">bold</b>.` + "\n\n" +
	"[a script link](javascript:window.__xss=4) and [the source](https://example.com/random-data) and [ref][r].\n\n" +
	"![a tracker](https://tracker.example.com/pixel.gif) ![a data image](data:image/svg+xml,<svg onload=alert(1)>)\n\n" +
	"[r]: JAVASCRIPT:window.__xss=5\n\n" +
	"| syntax | values |\n| --- | --- |\n| `uuid` | a random UUID |\n"

// An author claims a namespace and registers a key in the portal, publishes from the CLI and
// sees the version pending there; once an admin approves it, a tester finds it by search, reads
// its page (a README that can do nothing, the platforms and their digests, the signer, how to
// use it) and sorts the marketplace.
func TestTheMarketplaceInChromium(t *testing.T) {
	t.Parallel()
	bin := e2etest.BuildPlugins(t, "random-data")
	s := e2etest.NewPortalUser(t)
	p := s.Server
	const password = "a long password 1"
	author, tester := t.TempDir(), t.TempDir()
	for _, u := range []struct{ dir, email string }{{author, "author@example.com"}, {tester, "tester@example.com"}} {
		e2etest.MustCLI(t, p, u.dir, password+"\n", "signup", "--code", e2etest.Invite(t, p, s.Admin), "--email", u.email, "--name", "U")
		e2etest.MustCLI(t, p, u.dir, password+"\n", "login", "--email", u.email)
	}
	testerID := regexp.MustCompile(`(?m)^id: (\S+)$`).FindStringSubmatch(e2etest.MustCLI(t, p, tester, "", "me"))[1]

	// The author's namespace, claimed in the portal; a name taken is refused on its field.
	b := portaltest.New(t, p.URL)
	e2etest.SignIn(b, "author@example.com", password)
	b.Follow("Your plugins")
	b.WaitTitle("Your namespaces · Barrage")
	b.WaitText("You own no namespace yet.")
	b.Fill("Name", "acme")
	b.Click("Claim it")
	b.WaitTitle("Namespace acme · Barrage")
	b.WaitText("No key yet")
	b.Go("/namespaces")
	b.WaitText("acme")
	b.Fill("Name", "acme")
	b.Click("Claim it")
	b.WaitText(`namespace "acme" is taken`)

	// Its key: made on the author's machine, registered in the portal with its proof.
	e2etest.MustCLI(t, p, author, "", "plugin", "keygen")
	printed := e2etest.MustCLI(t, p, author, "", "namespaces", "add-key", "acme", "--print")
	m := regexp.MustCompile(`(?m)^public key: (\S+)\nproof: (\S+)$`).FindStringSubmatch(printed)
	require.NotNil(t, m, printed)
	b.Go("/namespaces/acme")
	b.WaitText("No key yet")
	b.Fill("Public key", m[1])
	b.Fill("Proof", "AAAA"+m[2][4:]) // not the key's proof
	b.Click("Register the key")
	b.WaitText("the proof is not a signature of this key")
	require.Contains(t, b.Text(), "No key yet")
	b.Fill("Proof", "proof: "+m[2]) // pasted with its label, as add-key --print prints it
	b.Click("Register the key")
	b.WaitText("active")
	b.Inspect("namespace")

	// A co-owner added by id, and removed.
	b.Fill("User id of a new owner", testerID)
	b.Click("Add owner")
	b.WaitText(testerID)
	b.Click("Remove owner " + testerID)
	b.WaitFor(`!document.body.innerText.includes(` + jsString(testerID) + `)`)

	// Published from the CLI, with the README; pending on the author's page.
	readme := filepath.Join(t.TempDir(), "README.md")
	require.NoError(t, os.WriteFile(readme, []byte(hostileREADME), 0o644))
	out := e2etest.MustCLI(t, p, author, "", "plugin", "publish", "--namespace", "acme", "--license", "MIT", "--tag", "data",
		"--readme", readme, "--config", `{"id": {"syntax": "uuid"}}`, filepath.Join(bin, "random-data"))
	require.Contains(t, out, "published acme/random-data@1.0.0, pending")
	b.Go("/namespaces/acme")
	b.WaitText("An admin reviews it")
	require.Contains(t, b.Text(), "pending")
	b.Inspect("namespace-pending")

	// The tester does not find it while it is pending, nor open it.
	tb := portaltest.New(t, p.URL)
	e2etest.SignIn(tb, "tester@example.com", password)
	tb.Follow("Marketplace")
	tb.WaitTitle("Marketplace · Barrage")
	tb.WaitText("No plugin is published yet.")
	tb.Go("/plugins/acme/random-data")
	tb.WaitText("plugin acme/random-data not found")

	// The admin reviews it in the queue: its manifest, every artifact's platform and digest.
	ab := portaltest.New(t, p.URL)
	e2etest.SignIn(ab, "ada@example.com", e2etest.AdminPassword)
	ab.Follow("Admin")
	ab.WaitTitle("Invitations · Barrage")
	ab.Follow("Plugin review")
	ab.WaitTitle("Plugin review · Barrage")
	ab.WaitText("acme/random-data@1.0.0")
	var pending struct {
		Artifacts []struct{ Os, Arch, Sha256 string }
	}
	adminBearer := strings.TrimSpace(e2etest.MustCLI(t, p, s.Admin, "", "tokens", "create", "--name", "admin read", "--scopes", "read,admin"))
	require.Equal(t, http.StatusOK, e2etest.APIGet(t, p, adminBearer, "/v1/plugins/acme/random-data/versions/1.0.0", &pending))
	queue := ab.Text()
	for _, a := range pending.Artifacts {
		require.Contains(t, queue, a.Os+"/"+a.Arch)
		require.Contains(t, queue, a.Sha256)
	}
	require.Contains(t, queue, "the first version")
	ab.Inspect("review")
	ab.Click("Approve acme/random-data@1.0.0")
	ab.WaitText("No version waits for review.")
	b.Go("/namespaces/acme")
	b.WaitText("Everyone signed in finds it")

	// Found by a word's beginning, and read.
	tb.Go("/plugins")
	tb.Fill("Words", "rand")
	tb.Click("Search")
	tb.WaitText("acme/random-data")
	tb.Inspect("marketplace")
	tb.Follow("acme/random-data")
	tb.WaitTitle("acme/random-data · Barrage")
	tb.WaitText("a random UUID") // the README's table, rendered
	var version struct {
		Signer    string
		Artifacts []struct{ Os, Arch, Sha256 string }
	}
	bearer := strings.TrimSpace(e2etest.MustCLI(t, p, tester, "", "tokens", "create", "--name", "read", "--scopes", "read"))
	require.Equal(t, http.StatusOK, e2etest.APIGet(t, p, bearer, "/v1/plugins/acme/random-data/versions/1.0.0", &version))
	text := tb.Text()
	require.Contains(t, text, version.Signer)
	for _, a := range version.Artifacts {
		require.Contains(t, text, a.Os+"/"+a.Arch)
		require.Contains(t, text, a.Sha256)
	}
	require.Contains(t, text, "{ use: acme/random-data@^1.0.0, as: random_data, kind: session-element }")
	require.Contains(t, text, "barrage plugin install acme/random-data@1.0.0")
	// The README did nothing: its HTML is text, its script links are no links, its images from
	// elsewhere are not loaded, its links to the web say so.
	require.Contains(t, text, "<script>window.__xss = 1</script>")
	require.Contains(t, text, `<img src=x onerror="window.__xss = 2">`)
	readmeIsInert := `(() => {
		const md = document.querySelector(".markdown");
		const links = [...md.querySelectorAll("a")];
		return window.__xss === undefined
			&& md.querySelectorAll("script, [onerror], [onclick], [onload], iframe, object").length === 0
			&& [...md.querySelectorAll("img")].length === 0
			&& links.length === 1 && links[0].href === "https://example.com/random-data" && links[0].rel === "noopener nofollow"
			&& md.innerText.includes("a script link") && md.innerText.includes("[image: a tracker]");
	})()`
	require.True(t, portaltest.Eval[bool](tb, readmeIsInert), "the README did something:\n%s", portaltest.Eval[string](tb, `document.querySelector(".markdown").innerHTML`))
	tb.Inspect("plugin")

	// Sorted by downloads: the one downloaded comes first.
	e2etest.MustCLI(t, p, s.Admin, "", "plugin", "keygen")
	e2etest.MustCLI(t, p, s.Admin, "", "namespaces", "create", "aaa")
	e2etest.MustCLI(t, p, s.Admin, "", "namespaces", "add-key", "aaa")
	e2etest.MustCLI(t, p, s.Admin, "", "plugin", "publish", "--namespace", "aaa", "--config", `{"id": {"syntax": "uuid"}}`, filepath.Join(bin, "random-data"))
	e2etest.MustCLI(t, p, s.Admin, "", "admin", "plugin", "approve", "aaa/random-data@1.0.0")
	e2etest.MustCLI(t, p, tester, "", "plugin", "install", "acme/random-data@1.0.0")
	firstRow := `document.querySelector("table tbody tr td").innerText`
	tb.Go("/plugins")
	tb.WaitText("aaa/random-data")
	require.Equal(t, "aaa/random-data", portaltest.Eval[string](tb, firstRow))
	tb.Choose("Order", "Most downloaded")
	tb.WaitFor(firstRow + ` === "acme/random-data"`)
	require.Equal(t, "?sort=downloads", portaltest.Eval[string](tb, `location.search`), "the order is in the page's address")
	tb.Choose("Platform", "linux/arm64")
	tb.WaitText("No plugin matches this search.")

	// The tester adds it to a test in the wizard, with its config, and runs the test on her
	// agent: the run pins it and counts.
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer target.Close()
	script := filepath.Join(t.TempDir(), "shop.yaml")
	require.NoError(t, os.WriteFile(script, []byte("version: 1\nname: with data\nbase_url: "+target.URL+
		"\nsession:\n  groups:\n    - name: g\n      requests:\n        - { name: home, url: / }\nload:\n  vus: 1\n  iterations: 2\n"), 0o644))
	test := strings.TrimSpace(e2etest.MustCLI(t, p, tester, "", "tests", "push", script))
	e2etest.OwnAgent(t, p, tester, "testers laptop")
	tb.Go("/tests/" + test + "/wizard")
	tb.WaitText("with data in the wizard")
	tb.WaitText("None: a plugin from the marketplace")
	portaltest.Eval[struct{}](tb, `document.querySelector("details.picker").open = true`)
	tb.Fill("Find a plugin", "random")
	tb.Click("Find")
	tb.Click("acme/random-data")
	tb.Choose("Version", "^1.0: the newest from 1.0.0, before 2.0.0")
	tb.Fill("Local name", "rnd")
	tb.Fill("Config (JSON)", `{"id": {"syntax": "uuid"}}`)
	tb.Click("Add it to the script")
	tb.WaitText("acme/random-data@^1.0 is in the script as rnd.")
	tb.Inspect("wizard-plugin")
	tb.Click("Save revision")
	tb.WaitText("Saved revision 2.")
	var rev struct{ Source string }
	require.Equal(t, http.StatusOK, e2etest.APIGet(t, p, bearer, "/v1/tests/"+test+"/revisions/2", &rev))
	require.Contains(t, rev.Source, "use: acme/random-data@^1.0")
	tb.Go("/tests/" + test + "/run")
	tb.WaitTitle("Run with data · Barrage")
	tb.Click("Start the run")
	tb.WaitTitle("Run of with data · Barrage")
	run := strings.TrimPrefix(portaltest.Eval[string](tb, `location.pathname`), "/runs/")
	e2etest.Eventually(t, 60*time.Second, "the run ends", func() bool {
		var r struct{ State string }
		require.Equal(t, http.StatusOK, e2etest.APIGet(t, p, bearer, "/v1/runs/"+run, &r))
		return r.State != "queued" && r.State != "starting" && r.State != "running"
	})
	var ran struct {
		State    string
		Manifest struct {
			Plugins []struct{ Name, Version string }
		}
	}
	require.Equal(t, http.StatusOK, e2etest.APIGet(t, p, bearer, "/v1/runs/"+run, &ran))
	require.Equal(t, "finished", ran.State)
	require.Len(t, ran.Manifest.Plugins, 1)
	require.Equal(t, "1.0.0", ran.Manifest.Plugins[0].Version)

	// The admin revokes it on its page; the tester's next launch is refused, saying why.
	ab.Go("/plugins/acme/random-data")
	ab.WaitText("As an admin: 1.0.0")
	ab.Fill("Reason", "it leaks data")
	ab.Click("Revoke 1.0.0")
	ab.WaitText("Revoked: it leaks data.")
	tb.Go("/tests/" + test + "/run")
	tb.WaitTitle("Run with data · Barrage")
	tb.Click("Start the run")
	tb.WaitText("no published version that you may use matches ^1.0: revoked, 1.0.0 (it leaks data)")
}

func jsString(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}
