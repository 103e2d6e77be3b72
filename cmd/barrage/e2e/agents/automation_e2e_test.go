package agents_test

import (
	"encoding/xml"
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
	"github.com/barrage-load/barrage/internal/targettest"
)

// A test with a baseline judges its later runs against it: a run against the same target slowed
// by half is marked regressed (in its summary, the list of runs, the trend, the JUnit file, and
// the exit status CI reads), and a run as fast as the baseline is not.
func TestABaselineCatchesARegression(t *testing.T) {
	f := newFleet(t)
	var delay atomic.Int64
	delay.Store(int64(20 * time.Millisecond))
	target := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		targettest.Work(r, time.Duration(delay.Load()))
	}))
	t.Cleanup(target.Close)
	path := f.scriptFile("checkout", `version: 1
name: checkout
session:
  groups:
    - name: buy
      requests:
        - { name: get cart, url: "`+target.URL+`/cart", assert: [ { status: 200 } ] }
load:
  vus: 4
  duration: 6s
thresholds:
  - p99 < 5s
`)
	test := strings.TrimSpace(e2etest.MustCLI(t, f.p, f.cfg, "", "tests", "push", path))
	dir := t.TempDir()

	// start runs the test to its end as CI does and returns the run's id, what the CLI printed,
	// its exit status and the JUnit file it wrote.
	start := func(name string) (string, string, int, junitDoc) {
		t.Helper()
		file := filepath.Join(dir, name+".xml")
		out, errOut, err := e2etest.CLI(t, f.p, f.cfg, "", "runs", "start", "--test", test, "--wait", "--junit", file)
		code := 0
		if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
			code = exit.ExitCode()
		} else {
			require.NoError(t, err)
		}
		id := e2etest.RunIDLine.FindStringSubmatch(out)
		require.NotNil(t, id, "stdout: %s\nstderr: %s", out, errOut)
		require.Contains(t, errOut, "run "+id[1]+": finished", "--wait says the run's states as they change")
		require.NotContains(t, errOut, "vus", "--wait prints no live lines")
		raw, err := os.ReadFile(file)
		require.NoError(t, err, "stderr: %s", errOut)
		var doc junitDoc
		require.NoError(t, xml.Unmarshal(raw, &doc), "%s", raw)
		return id[1], out, code, doc
	}

	base, out, code, junit := start("base")
	require.Zero(t, code, out)
	// A steady target at a steady load: nothing of the target's to look at.
	var findings struct {
		Insights []struct {
			Kind string `json:"kind"`
		} `json:"insights"`
	}
	require.Equal(t, http.StatusOK, e2etest.APIGet(t, f.p, f.token, "/v1/runs/"+base+"/summary", &findings))
	for _, in := range findings.Insights {
		require.NotContains(t, []string{"knee", "errors_from_load", "dominant_request", "correlated_metric"}, in.Kind)
	}
	require.NotContains(t, out, "against the test's baseline", "the test has no baseline yet")
	require.Zero(t, junit.Failures, "%+v", junit)
	require.Equal(t, []string{"run", "thresholds", "checks"}, junit.suiteNames())

	// The baseline, with tolerances wide enough for a loaded machine's noise and narrow enough
	// for half as slow again.
	set := e2etest.MustCLI(t, f.p, f.cfg, "", "tests", "baseline", test, "--run", base,
		"--max-p50-regression", "25", "--max-p95-regression", "25", "--max-p99-regression", "40", "--max-rps-regression", "20")
	require.Contains(t, set, "Run "+base+" is the baseline")
	_, shown, err := e2etest.CLI(t, f.p, f.cfg, "", "tests", "show", test)
	require.NoError(t, err)
	require.Contains(t, shown, "baseline: run "+base+" (p50 +25%, p95 +25%, p99 +40%, requests/s -20%, errors +1 points)")

	delay.Store(int64(30 * time.Millisecond))
	slow, out, code, junit := start("slow")
	require.Equal(t, 99, code, "a regression fails the CI job: %s", out)
	require.Contains(t, out, "against the test's baseline, run "+base)
	require.Regexp(t, `verdict: regressed \(.*p50_ms of all requests`, out)
	require.Positive(t, junit.Failures)
	regressions := junit.failures("baseline")
	require.Contains(t, regressions, "all requests: p50_ms", "%+v", junit)
	require.Empty(t, junit.failures("thresholds"))

	delay.Store(int64(20 * time.Millisecond))
	fast, out, code, junit := start("fast")
	require.Zero(t, code, "as fast as the baseline: %s", out)
	require.Contains(t, out, "against the test's baseline, run "+base)
	require.NotContains(t, out, "verdict: regressed")
	require.Zero(t, junit.Failures, "%+v", junit)
	require.Equal(t, []string{"run", "thresholds", "checks", "baseline"}, junit.suiteNames())

	// The trend shows the three runs, oldest first, the baseline and the regression marked.
	var trend struct {
		Baseline string `json:"baseline_run_id"`
		Runs     []struct {
			RunID    string `json:"run_id"`
			Baseline bool   `json:"baseline"`
			Verdict  string `json:"verdict"`
			Total    struct {
				P50MS float64 `json:"p50_ms"`
			} `json:"total"`
			Requests []struct {
				Name string `json:"name"`
			} `json:"requests"`
		} `json:"runs"`
	}
	require.Equal(t, http.StatusOK, e2etest.APIGet(t, f.p, f.token, "/v1/tests/"+test+"/trend", &trend))
	require.Equal(t, base, trend.Baseline)
	require.Len(t, trend.Runs, 3)
	for i, want := range []struct {
		id, verdict string
		baseline    bool
	}{{base, "", true}, {slow, "regressed", false}, {fast, "unchanged", false}} {
		r := trend.Runs[i]
		require.Equal(t, want.id, r.RunID)
		require.Equal(t, want.baseline, r.Baseline)
		require.Equal(t, want.verdict, r.Verdict, "run %d", i)
		require.Equal(t, "get cart", r.Requests[0].Name)
	}
	require.Greater(t, trend.Runs[1].Total.P50MS, 1.3*trend.Runs[0].Total.P50MS)
	printed := e2etest.MustCLI(t, f.p, f.cfg, "", "tests", "trend", test)
	require.Regexp(t, `(?m)^`+base+`\s.*\sBASELINE$`, printed)
	require.Regexp(t, `(?m)^`+slow+`\s.*\sregressed$`, printed)

	// The list of runs says it in brief; the JUnit file of an ended run is there for later.
	var list struct {
		Items []struct {
			ID      string `json:"id"`
			Outcome struct {
				BaselineVerdict string `json:"baseline_verdict"`
			} `json:"outcome"`
		} `json:"items"`
	}
	require.Equal(t, http.StatusOK, e2etest.APIGet(t, f.p, f.token, "/v1/runs?test_id="+test, &list))
	verdicts := map[string]string{}
	for _, r := range list.Items {
		verdicts[r.ID] = r.Outcome.BaselineVerdict
	}
	require.Equal(t, map[string]string{base: "", slow: "regressed", fast: "unchanged"}, verdicts)
	later := filepath.Join(dir, "later.xml")
	e2etest.MustCLI(t, f.p, f.cfg, "", "runs", "report", "--junit", later, slow)
	raw, err := os.ReadFile(later)
	require.NoError(t, err)
	require.Contains(t, string(raw), `type="regression"`)

	// A baseline is a finished run of the test: anything else is refused on run_id (who may set
	// one is the API's tenancy test's).
	_, errOut, err := e2etest.CLI(t, f.p, f.cfg, "", "tests", "baseline", test, "--run", test)
	require.Error(t, err)
	require.Contains(t, errOut, "run_id")
	e2etest.MustCLI(t, f.p, f.cfg, "", "tests", "baseline", test, "--clear")
	var cleared struct {
		Baseline *string `json:"baseline_run_id"`
	}
	require.Equal(t, http.StatusOK, e2etest.APIGet(t, f.p, f.token, "/v1/tests/"+test+"/trend", &cleared))
	require.Nil(t, cleared.Baseline)
}

// junitDoc is what CI reads of a JUnit file.
type junitDoc struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Suites   []struct {
		Name  string `xml:"name,attr"`
		Cases []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Type    string `xml:"type,attr"`
				Message string `xml:"message,attr"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func (d junitDoc) suiteNames() []string {
	var names []string
	for _, s := range d.Suites {
		names = append(names, s.Name)
	}
	return names
}

// failures are the names of the failed cases of suite.
func (d junitDoc) failures(suite string) []string {
	var names []string
	for _, s := range d.Suites {
		for _, c := range s.Cases {
			if s.Name == suite && c.Failure != nil {
				names = append(names, c.Name)
			}
		}
	}
	return names
}
