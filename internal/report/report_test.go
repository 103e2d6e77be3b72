package report_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/report"
	"github.com/barrage-load/barrage/internal/report/reporttest"
	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/internal/summary"
)

// result is a run of n seconds whose requests/s are rps(i) and p95 is p95ms, with 4xx errors in
// its second half and a last second of a tenth of a second.
func result(n int, rps func(i int) float64, p95ms float64) *summary.Result {
	r := &summary.Result{Script: "shop.yaml", Model: "open", Start: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC),
		ElapsedS: float64(n) + 0.1, Iterations: 1000}
	r.Total = summary.Label{Name: "all requests", Count: 1000, RPS: 100, P50MS: p95ms / 2, P95MS: p95ms, P99MS: p95ms * 1.5}
	r.Requests = []summary.Label{{Name: "get home", Count: 1000, RPS: 100, P50MS: p95ms / 2, P95MS: p95ms, P99MS: p95ms * 1.5}}
	r.Errors = map[string]int64{"4xx": 40, "5xx": 0}
	r.Thresholds = []summary.Threshold{{Check: "p95 < 300ms", Observed: p95ms / 1000, Passed: true}}
	r.Stability = &summary.Stability{CV: 0.02, MeanRPS: 100, FromS: 1, ToS: int64(n - 1), Seconds: n - 2, Limit: 0.1}
	for i := range n + 1 {
		p := summary.Point{Second: int64(i + 1), RPS: rps(i), Requests: int64(rps(i)), P50MS: p95ms / 2, P95MS: p95ms,
			P99MS: p95ms * 1.5, VUs: 10, CPU: 0.2}
		if i >= n/2 {
			p.Errors, p.ErrorsByClass = 5, map[string]int64{"4xx": 5}
		}
		if i == n {
			p.RPS = 5000 // a tenth of a second: no one saw this rate
		}
		r.Series = append(r.Series, p)
	}
	return r
}

func write(t *testing.T, r report.Report) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, r.Write(&b))
	return b.String()
}

// The page holds everything it shows: no address outside it, its policy forbids fetching,
// and the data the charts draw are the run's seconds, without a last fraction of a second.
func TestAReportIsOneSelfContainedPage(t *testing.T) {
	t.Parallel()
	page := write(t, report.Report{Title: "shop.yaml", Run: result(20, func(int) float64 { return 100 }, 120), Version: "v1.2.3",
		Generated: time.Now()})
	require.NotRegexp(t, `(src|href)="(https?:)?//`, page, "nothing is fetched from elsewhere")
	require.Contains(t, page, `<meta http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;;`)
	require.Contains(t, page, "uPlot")
	require.Contains(t, page, "Steady throughput")
	require.Contains(t, page, "The result measures the target")
	require.Contains(t, page, "<td>get home</td>")
	require.Contains(t, page, "<td>p95 &lt; 300ms</td><td>120.00ms</td>")
	require.Contains(t, page, "barrage v1.2.3")
	require.Contains(t, page, "@media print")
	data := regexp.MustCompile(`(?s)<script id="report-data" type="application/json">(.*?)</script>`).FindStringSubmatch(page)
	require.NotNil(t, data)
	require.Contains(t, data[1], `"second":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20]`, "the last tenth of a second is not drawn")
	require.NotContains(t, data[1], "5000")
	require.Contains(t, data[1], `"4xx":[0,0,0,0,0,0,0,0,0,0,5,`)
}

// What a run names itself cannot break out of the page: titles, labels and reasons are text.
func TestAReportEscapesWhatTheRunNamed(t *testing.T) {
	t.Parallel()
	evil := `</script><script>alert(1)</script>`
	r := result(10, func(int) float64 { return 100 }, 50)
	r.Requests[0].Name = evil
	r.Verdict = summary.Verdict{GeneratorLimited: true, Reasons: []string{evil}}
	page := write(t, report.Report{Title: evil, Run: r})
	require.NotContains(t, page, evil)
	require.Equal(t, 4, strings.Count(page, "<script"), "the data, uPlot and the report's own two scripts; no other")
	require.Contains(t, page, "The result measures the tool")
}

// Held against a base, the page gives the comparison's verdict and what regressed, and the
// charts carry the base's series.
func TestAReportDrawsTheComparison(t *testing.T) {
	t.Parallel()
	base, next := result(10, func(int) float64 { return 100 }, 100), result(12, func(int) float64 { return 100 }, 140)
	c := summary.Compare(base, next, summary.DefaultTolerances)
	require.Equal(t, summary.Regressed, c.Verdict)
	page := write(t, report.Report{Title: "new", Run: next, Base: base, BaseTitle: "base.json", Comparison: &c})
	require.Contains(t, page, "Against base.json: regressed (")
	require.Contains(t, page, "p95_ms of all requests")
	require.Contains(t, page, `<td class="fail">regressed</td>`)
	require.Contains(t, page, `"base":{"second":[1,2,3,4,5,6,7,8,9,10]`)
}

// In a real Chromium, with no network: every chart draws its lines, the page asks for nothing
// but itself, and the screenshot shows the charts' colours.
func TestAReportDrawsInABrowserWithoutTheNetwork(t *testing.T) {
	t.Parallel()
	base := result(30, func(int) float64 { return 100 }, 100)
	next := result(30, func(i int) float64 { return 100 + float64(40*(i%2)) }, 130)
	c := summary.Compare(base, next, summary.DefaultTolerances)
	page := reporttest.Open(t, []byte(write(t, report.Report{Title: "browser", Run: next, Base: base, BaseTitle: "base", Comparison: &c})))
	for _, path := range page.Served {
		require.Equal(t, "/report.html", path, "the page asks its server for nothing but itself")
	}
	require.Empty(t, page.Fetched, "nothing fetched beyond the page")
	ink, charts := page.Ink()
	require.Equal(t, 4, charts, "dom: %.2000s", page.DOM)
	for _, id := range []string{"chart-rps", "chart-latency", "chart-errors", "chart-vus"} {
		require.Greater(t, ink[id], 300, "%s drew its lines", id)
	}
	for name, colour := range map[string]string{"requests/s": "#2563eb", "p95": "#d97706", "active VUs": "#7c3aed", "4xx": "#dc2626"} {
		require.Greater(t, page.Pixels(colour), 300, "the screenshot shows %s (%s)", name, colour)
	}
}

// The browser test's watch on the network works: a page that fetches (and has no policy
// against it) is caught.
func TestTheBrowserTestCatchesAFetch(t *testing.T) {
	t.Parallel()
	page := reporttest.Open(t, []byte(`<!doctype html><html><body><img src="http://report-test.invalid/x.png"><script src="/elsewhere.js"></script></body></html>`))
	require.Contains(t, page.Served, "/elsewhere.js")
	require.NotEmpty(t, page.Fetched)
	require.Contains(t, strings.Join(page.Fetched, ""), "report-test.invalid")
}

// A document no run could have written is refused before anything is drawn (a second far past
// any run would have the page allocate for every second up to it); what a run may write, even
// oddly, draws: a class counted zero, no seconds at all.
func TestAReportRefusesWhatNoRunWrote(t *testing.T) {
	t.Parallel()
	for name, spoil := range map[string]func(r *summary.Result){
		"a second far past any run": func(r *summary.Result) { r.Series[3].Second = 1e15 },
		"a second before the run":   func(r *summary.Result) { r.Series[3].Second = 0 },
		"a negative rate":           func(r *summary.Result) { r.Series[3].RPS = -1 },
		"a run of a year":           func(r *summary.Result) { r.ElapsedS = 365 * 24 * 3600 },
	} {
		r := result(10, func(int) float64 { return 100 }, 50)
		spoil(r)
		var b bytes.Buffer
		err := report.Report{Title: name, Run: r}.Write(&b)
		require.Error(t, err, name)
		require.Zero(t, b.Len(), "%s: nothing written", name)
	}

	r := result(10, func(int) float64 { return 100 }, 50)
	r.Series[0].ErrorsByClass = map[string]int64{"timeout": 0}
	r.Series[1].CPU = 1e307 // drawn as 100%
	require.Contains(t, write(t, report.Report{Title: "odd", Run: r}), `"cpu":[20,100,20`)

	empty := result(0, func(int) float64 { return 0 }, 0)
	empty.Series, empty.ElapsedS = []summary.Point{}, 0
	require.Contains(t, write(t, report.Report{Title: "empty", Run: empty}), `"second":[]`)
}

// The top of the page says whether the thresholds held; the iterations of a run that does not
// count them are not shown as none.
func TestAReportSaysWhetherTheThresholdsHeld(t *testing.T) {
	t.Parallel()
	r := result(10, func(int) float64 { return 100 }, 50)
	r.Thresholds = append(r.Thresholds, summary.Threshold{Check: "error_rate < 1%", Observed: 0.5, Passed: false})
	page := write(t, report.Report{Title: "t", Run: r})
	require.Contains(t, page, "1 of 2 thresholds failed: error_rate &lt; 1%.")
	r.Thresholds, r.Iterations = r.Thresholds[:1], 0
	page = write(t, report.Report{Title: "t", Run: r})
	require.Contains(t, page, "All 1 thresholds held.")
	require.NotContains(t, page, "0 iterations")
}

// The checks are tallied in a table; one that failed on some responses is said at the top too.
func TestAReportTalliesTheChecks(t *testing.T) {
	t.Parallel()
	r := result(10, func(int) float64 { return 100 }, 50)
	r.Checks = []summary.Check{
		{Check: script.Check{Request: "get home", Name: "status 200"}, Passes: 1000},
		{Check: script.Check{Request: "get home", Name: "json $.qty equals 3"}, Passes: 990, Fails: 10},
	}
	page := write(t, report.Report{Title: "t", Run: r})
	require.Contains(t, page, "1 of 2 checks failed on some responses: get home: json $.qty equals 3 (10 of 1000 responses).")
	require.Contains(t, page, `<td>get home</td><td>json $.qty equals 3</td><td>99.00%</td><td>990</td><td><span class="fail">10</span></td>`)
	require.Contains(t, page, `<td>get home</td><td>status 200</td><td>100.00%</td><td>1000</td><td>0</td>`)
	r.Checks = r.Checks[:1]
	require.NotContains(t, write(t, report.Report{Title: "t", Run: r}), `id="checks-verdict"`)
}

// A run on agents that did not finish, and whose figures stop short, leads with both, before any
// verdict; its thresholds held on incomplete figures and its stability says what it covers.
func TestAReportLeadsWithAFailedRunAndItsIncompleteFigures(t *testing.T) {
	t.Parallel()
	r := result(20, func(int) float64 { return 100 }, 120)
	r.Incomplete = summary.NewIncomplete([]summary.Gap{
		summary.NewGap("one (0d6c)", "lost", "the agent sent nothing for 8s", 12, 50, 1.2, 4),
	})
	r.Stability.Note = "every agent, before second 12, when the first stopped short"
	page := write(t, report.Report{Title: "shop", Run: r, State: "failed", Reason: "agent 0d6c was lost", Version: "test",
		Agents: []report.Agent{{Name: "one (0d6c)", State: "lost"}, {Name: "two (7a1e)", State: "finished"}}, Uncounted: []string{"one (0d6c)"}})
	require.Contains(t, page, "at least 1000 iterations", "the lost agent's iterations are not counted, and the page says so")
	require.Contains(t, page, "(the iterations of one (0d6c) not counted: it sent no end)")
	state, incomplete := strings.Index(page, `id="run-state"`), strings.Index(page, `id="incomplete"`)
	require.Positive(t, state)
	require.Greater(t, incomplete, state)
	require.Less(t, incomplete, strings.Index(page, `class="verdict"`), "before the verdicts")
	require.Contains(t, page, "The run failed: agent 0d6c was lost.")
	require.Contains(t, page, "up to 64 requests the target served may not be counted")
	require.Contains(t, page, "All 1 thresholds held, on incomplete figures.")
	require.Contains(t, page, "judged on every agent, before second 12")

	// A finished local run says neither.
	page = write(t, report.Report{Title: "shop", Run: result(20, func(int) float64 { return 100 }, 120), Version: "test"})
	require.NotContains(t, page, `id="run-state"`)
	require.NotContains(t, page, `id="incomplete"`)
}

// A run's findings lead, after its state and before the verdicts; a run of a test lists the
// test's last runs, itself and the baseline marked.
func TestAReportLeadsWithItsFindingsAndListsItsTestsRuns(t *testing.T) {
	t.Parallel()
	r := result(20, func(int) float64 { return 100 }, 120)
	r.Insights = []summary.Insight{
		{Kind: summary.InsightLostAgent, Title: "agent one lost", Evidence: "said by the incomplete figures"},
		{Kind: summary.InsightKnee, Title: "a knee at about 8 VUs: past it throughput stopped rising while latency climbed", Evidence: "from 8 to 10 VUs (+25%)"},
	}
	this, base := uuid.New(), uuid.New()
	trend := &summary.Trend{Runs: []summary.TrendRun{
		{RunID: base, State: "finished", Baseline: true, Total: summary.TrendFigures{RPS: 190.2, P95MS: 21.9}},
		{RunID: this, State: "finished", Verdict: summary.Regressed, Total: summary.TrendFigures{RPS: 128.6, P95MS: 32}},
	}}
	page := write(t, report.Report{Title: "shop", Run: r, Version: "test", Trend: trend, RunID: this})
	insights := strings.Index(page, `id="insights"`)
	require.Positive(t, insights)
	require.Less(t, insights, strings.Index(page, `class="verdict"`), "before the verdicts")
	require.Contains(t, page, "<strong>a knee at about 8 VUs: past it throughput stopped rising while latency climbed</strong>: from 8 to 10 VUs")
	require.NotContains(t, page, "agent one lost", "a lost agent is the incomplete figures' to say")
	require.Contains(t, page, `<td>`+base.String()+`</td>`)
	require.Regexp(t, `<tr class="this"><td>this run</td>.*<td class="fail">regressed</td></tr>`, page)
	require.Contains(t, page, `<td class="">baseline</td>`)

	page = write(t, report.Report{Title: "shop", Run: result(20, func(int) float64 { return 100 }, 120), Version: "test"})
	require.NotContains(t, page, `id="insights"`)
	require.NotContains(t, page, `id="trend"`)
}
