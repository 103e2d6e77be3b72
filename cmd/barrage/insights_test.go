package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/e2etest"
	"github.com/barrage-load/barrage/internal/summary"
	"github.com/barrage-load/barrage/internal/targettest"
)

// A ramp of VUs against a target that serves 4 requests at a time finds its knee: past 4 VUs the
// throughput stops rising while the waits grow. The same target under a steady 2 VUs has none.
// Each request takes the target 50 ms, so that it, not a generator slowed by the race detector
// on a loaded machine (CI found no knee once at 20 ms), is what limits the throughput.
func TestARampPastTheTargetsCapacityFindsItsKnee(t *testing.T) {
	t.Parallel()
	target := targettest.NewLimited(t, 4, 50*time.Millisecond)
	run := func(load string) (string, summary.Result) {
		t.Helper()
		path := e2etest.OneRequestScript(t, "get work", target.URL, load)
		out := filepath.Join(filepath.Dir(path), "result.json")
		stdout, stderr, code := e2etest.RunCLI(t, "run", "--quiet", "--out", out, path)
		require.Zero(t, code, "stderr: %s", stderr)
		raw, err := os.ReadFile(out)
		require.NoError(t, err)
		var res summary.Result
		require.NoError(t, json.Unmarshal(raw, &res))
		return stdout, res
	}
	kinds := func(res summary.Result) map[string]summary.Insight {
		m := map[string]summary.Insight{}
		for _, in := range res.Insights {
			m[in.Kind] = in
		}
		return m
	}

	stdout, res := run("{ stages: [ { ramp_to: 16, duration: 16s } ] }")
	knee, ok := kinds(res)[summary.InsightKnee]
	require.True(t, ok, "the findings: %+v\nthe seconds:\n%s", res.Insights, seconds(res))
	t.Log(knee.Title + ": " + knee.Evidence)
	require.GreaterOrEqual(t, knee.Figures["vus"], 3.0, knee.Evidence)
	require.LessOrEqual(t, knee.Figures["vus"], 10.0, knee.Evidence) // past the target's 4 at a time, well before the ramp's 16
	require.Contains(t, stdout, "LOOK AT:\n")
	require.Contains(t, stdout, knee.Title)

	_, res = run("{ vus: 2, duration: 12s }")
	require.NotContains(t, kinds(res), summary.InsightKnee, "%+v", res.Insights)
	require.NotContains(t, kinds(res), summary.InsightErrorsFromLoad)
}

// seconds lists a result's seconds, VUs, successful requests/s and p95: what a knee is read from.
func seconds(res summary.Result) string {
	var b strings.Builder
	for _, p := range res.Series {
		fmt.Fprintf(&b, "second %d: %d VUs, %.1f requests/s, %d errors, p95 %.1f ms, cpu %.2f\n", p.Second, p.VUs, p.RPS, p.Errors, p.P95MS, p.CPU)
	}
	return b.String()
}
