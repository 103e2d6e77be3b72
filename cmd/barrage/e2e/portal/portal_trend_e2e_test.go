package portal_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/e2etest"
	"github.com/barrage-load/barrage/internal/portal/portaltest"
	"github.com/barrage-load/barrage/internal/targettest"
)

// A test's baseline and trend in the portal: a run's page makes its run the test's baseline; the
// next run, against the same target slowed by half again, says on its page that it regressed; the
// test's page draws both runs' figures, marks the baseline and the regression in its table, and
// clears the baseline, which the API then no longer has; the regressed run, made the baseline in
// its turn, says both on its page.
func TestBaselinesAndTrendsInChromium(t *testing.T) {
	s := e2etest.NewPortalUser(t)
	p := s.Server
	b := portaltest.New(t, p.URL)
	b.Go("/signup")
	b.WaitTitle("Sign up · Barrage")
	e2etest.SignUp(b, s.Code, "grace@example.com", "Grace Hopper", "graces long password")
	b.WaitTitle("Tests · Barrage")

	// Her agent, her token, and a target whose latency the test sets.
	cfg := t.TempDir()
	e2etest.MustCLI(t, p, cfg, "graces long password\n", "login", "--email", "grace@example.com")
	e2etest.OwnAgent(t, p, cfg, "laptop")
	token := strings.TrimSpace(e2etest.MustCLI(t, p, cfg, "", "tokens", "create", "--name", "e2e", "--scopes", "read"))
	var delay atomic.Int64
	delay.Store(int64(20 * time.Millisecond))
	target := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		targettest.Work(r, time.Duration(delay.Load()))
	}))
	t.Cleanup(target.Close)
	script := filepath.Join(t.TempDir(), "checkout.yaml")
	require.NoError(t, os.WriteFile(script, []byte(`version: 1
name: checkout
session:
  groups:
    - name: buy
      requests:
        - { name: get cart, url: "`+target.URL+`/cart", assert: [ { status: 200 } ] }
load:
  vus: 4
  duration: 5s
`), 0o644))
	test := strings.TrimSpace(e2etest.MustCLI(t, p, cfg, "", "tests", "push", script))

	// run runs the test to its end as CI does, and returns the run's id; it may exit 99, a
	// regression, not 1, a run that did not finish.
	run := func() string {
		t.Helper()
		out, errOut, err := e2etest.CLI(t, p, cfg, "", "runs", "start", "--test", test, "--wait")
		if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
			require.Equal(t, 99, exit.ExitCode(), "stdout: %s\nstderr: %s", out, errOut)
		} else {
			require.NoError(t, err)
		}
		id := e2etest.RunIDLine.FindStringSubmatch(out)
		require.NotNil(t, id, "stdout: %s\nstderr: %s", out, errOut)
		require.Contains(t, errOut, "run "+id[1]+": finished")
		return id[1]
	}
	// baselineOf is the test's baseline run as the API gives it, "" when it has none.
	baselineOf := func() string {
		t.Helper()
		var got map[string]json.RawMessage
		require.Equal(t, http.StatusOK, e2etest.APIGet(t, p, token, "/v1/tests/"+test, &got))
		raw, ok := got["baseline"]
		if !ok || string(raw) == "null" {
			return ""
		}
		var bl struct {
			RunID string `json:"run_id"`
		}
		require.NoError(t, json.Unmarshal(raw, &bl))
		return bl.RunID
	}
	// section is the page's section headed title.
	section := func(title string) string {
		return `[...document.querySelectorAll("section")].find((s) => s.querySelector("h2")?.textContent === ` + jsString(title) + `)`
	}
	baseline := section("Baseline")
	trend := section("Trend")

	// The first run, on its page, is made the test's baseline.
	first := run()
	b.Go("/runs/" + first)
	b.WaitTitle("Run of checkout · Barrage")
	b.WaitFor(baseline + `?.innerText.includes("This run was not held against a baseline.")`)
	b.Click("Make this run the test's baseline")
	b.WaitFor(baseline + `?.innerText.includes("This run is the test's baseline")`)
	require.False(t, portaltest.Eval[bool](b, baseline+`.querySelector("button") !== null`), "the baseline is not offered to be made the baseline again")
	require.Equal(t, first, baselineOf())

	// The second, half as slow again, regressed: its page says so against the baseline's run.
	delay.Store(int64(30 * time.Millisecond))
	second := run()
	b.Go("/runs/" + second)
	b.WaitTitle("Run of checkout · Barrage")
	b.WaitFor(baseline + `?.querySelector(".badge")?.textContent === "regressed"`)
	said := portaltest.Eval[string](b, baseline+`.innerText`)
	require.Contains(t, said, "Against the test's baseline")
	require.Contains(t, said, "p50 of all requests", "the regression names its figure")
	require.True(t, portaltest.Eval[bool](b, baseline+`.querySelector("a[href='/runs/`+first+`']") !== null`), "it links to the baseline's run")
	require.True(t, portaltest.Eval[bool](b, baseline+`.querySelector("a[href='/runs/`+second+`/compare?base=`+first+`']") !== null`), "it links to the comparison")
	b.Inspect("run-baseline")

	// The test's page: both runs drawn and listed, oldest first, the baseline and the
	// regression marked.
	b.Go("/tests/" + test)
	b.WaitTitle("checkout · Barrage")
	// The table's rows (uPlot's legends are tables too).
	rows := `[...(` + trend + `?.querySelectorAll("table") ?? [])].find((t) => t.caption?.textContent === "The test's last runs, oldest first")?.tBodies[0].rows`
	b.WaitFor(rows + `?.length === 2`)
	type row struct {
		Run     string `json:"run"`
		Against string `json:"against"`
	}
	read := func() []row {
		return portaltest.Eval[[]row](b, `[...`+rows+`].map((r) => ({ run: r.querySelector("a").getAttribute("href"), against: r.lastElementChild.innerText.trim() }))`)
	}
	require.Equal(t, []row{{"/runs/" + first, "baseline"}, {"/runs/" + second, "regressed"}}, read())
	// Its two charts, the response times' and the requests/s', drawn.
	b.WaitFor(`[...` + trend + `.querySelectorAll(".chart canvas")].filter((c) => c.width > 0 && c.height > 0).length === 2`)
	require.Contains(t, portaltest.Eval[string](b, trend+`.innerText`), "Its runs are held against the baseline, run "+first[:8]+
		", within p50 +10%, p95 +10%, p99 +20%, requests/s −10% and errors +1 point.", "the default tolerances")
	b.Inspect("test-trend")

	// Cleared, the test has no baseline, on the page and in the API; the regression stays the
	// second run's verdict.
	b.Click("Clear the baseline")
	b.WaitFor(trend + `?.innerText.includes("No baseline: a finished run's page makes it the one the test's later runs are held against.")`)
	b.WaitFor(rows + `?.length === 2 && [...` + rows + `].every((r) => !r.innerText.includes("baseline"))`)
	require.Equal(t, []row{{"/runs/" + first, "–"}, {"/runs/" + second, "regressed"}}, read())
	require.Empty(t, baselineOf())

	// The regressed run made the baseline in its turn: its page says both.
	b.Go("/runs/" + second)
	b.WaitTitle("Run of checkout · Barrage")
	b.Click("Make this run the test's baseline")
	b.WaitFor(baseline + `?.innerText.includes("This run is the test's baseline")`)
	require.Equal(t, "regressed", portaltest.Eval[string](b, baseline+`.querySelector(".badge").textContent`))
	require.Equal(t, second, baselineOf())
}

// jsString quotes s as a JavaScript string.
func jsString(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}
