package summary

import (
	"bytes"
	"encoding/xml"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/script"
)

type junitRead struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Suites   []struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Cases    []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Type    string `xml:"type,attr"`
				Message string `xml:"message,attr"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func junitOf(t *testing.T, d *Document) junitRead {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, d.JUnit(&b, "checkout"))
	var out junitRead
	require.NoError(t, xml.Unmarshal(b.Bytes(), &out), b.String())
	return out
}

func TestJUnitFailsWhatFailedAndPassesTheRest(t *testing.T) {
	d := &Document{State: barrage.RunFinished, ElapsedS: 60, Summary: Summary{
		Thresholds: []Threshold{
			{Check: "p95 < 500ms", Observed: 0.612, Passed: false},
			{Check: "error_rate < 1%", Request: "get cart", Observed: 0.001, Passed: true},
		},
		Checks: []Check{
			{Check: script.Check{Request: "get cart", Name: "status is 200"}, Passes: 4990, Fails: 10},
			{Check: script.Check{Request: "get cart", Name: "body has \x01items"}, Passes: 5000},
		},
	}}
	out := junitOf(t, d)
	require.Equal(t, 5, out.Tests)
	require.Equal(t, 2, out.Failures)
	require.Len(t, out.Suites, 3)
	run, ths, checks := out.Suites[0], out.Suites[1], out.Suites[2]
	require.Equal(t, "run", run.Name)
	require.Nil(t, run.Cases[0].Failure)
	require.Equal(t, "thresholds", ths.Name)
	require.Equal(t, "threshold", ths.Cases[0].Failure.Type)
	require.Contains(t, ths.Cases[0].Failure.Message, "p95 < 500ms")
	require.Equal(t, "get cart: error_rate < 1%", ths.Cases[1].Name)
	require.Nil(t, ths.Cases[1].Failure)
	require.Equal(t, "checks", checks.Name)
	require.Equal(t, "10 of 5000 responses failed it (99.80% passed)", checks.Cases[0].Failure.Message)
	require.Nil(t, checks.Cases[1].Failure, "a name XML cannot carry is written as it can")
}

func TestJUnitOfARunThatWentWrong(t *testing.T) {
	d := &Document{State: barrage.RunFailed, Reason: "agent one was lost: silent for 8s", ElapsedS: 12,
		Summary: Summary{Incomplete: NewIncomplete([]Gap{NewGap("one", "lost", "silent", 7, 100, 2, 4)})},
		Baseline: &BaselineComparison{Comparison: Comparison{
			Total: LabelComparison{Name: "all requests", Verdict: Regressed, Changes: []Change{
				{Metric: "p50_ms", Base: 20, New: 30, Change: 0.5, Noise: 0.02, Tolerance: 0.1, Verdict: Regressed},
				{Metric: "rps", Base: 200, New: 199, Change: -0.005, Noise: 0.02, Tolerance: 0.1, Verdict: Unchanged},
			}},
			Verdict: Regressed,
		}}}
	out := junitOf(t, d)
	require.Equal(t, 3, out.Failures, "the run's end, its incomplete figures, p50's regression")
	require.Equal(t, "the run ended failed: agent one was lost: silent for 8s", out.Suites[0].Cases[0].Failure.Message)
	require.Equal(t, "incomplete", out.Suites[0].Cases[1].Failure.Type)
	base := out.Suites[len(out.Suites)-1]
	require.Equal(t, "baseline", base.Name)
	require.Equal(t, "all requests: p50_ms", base.Cases[0].Name)
	require.Contains(t, base.Cases[0].Failure.Message, "+50.0%, noise ±2.0%, tolerance 10%: regressed")
	require.Nil(t, base.Cases[1].Failure)
}
