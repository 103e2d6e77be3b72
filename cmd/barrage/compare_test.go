package main_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/e2etest"
	"github.com/barrage-load/barrage/internal/targettest"
)

// Comparing a run against a target made 30% slower reports the median's regression and exits 99;
// comparing two runs of the same target reports unchanged and exits 0. The tolerances leave
// room for what a loaded CI machine does to a run's tail between one run and the next (the
// noise is each run's own variation, not the drift between them). The runs arrive at a fixed
// rate (the open model): a closed model's rate follows its latency, which a machine loaded by
// other suites moved by 10% between two runs of the same target, and called that "improved".
func TestCompareFindsTheRegressionAndOnlyIt(t *testing.T) {
	t.Parallel()
	run := func(url string) string {
		_, out := e2etest.RunOut(t, "checkout", url, "{ rate: 80/s, duration: 5s, max_vus: 40 }")
		return out
	}
	// Latencies of 100 ms dominate what a loaded machine adds to a request (a few ms).
	base, again, slower := run(targettest.Slow(t, 100*time.Millisecond)), run(targettest.Slow(t, 100*time.Millisecond)), run(targettest.Slow(t, 130*time.Millisecond))
	// The p99 of 400 requests is their fourth slowest, the p95 their twentieth: stalls of a
	// machine loaded by other suites moved them by 55% and 30% between two runs of the same
	// target, while the median moved by 4%. The median measures the change; the tails get room.
	tol := []string{"--max-p50-regression", "15%", "--max-p95-regression", "100%", "--max-p99-regression", "300%"}

	stdout, stderr, code := e2etest.RunCLI(t, append(append([]string{"compare"}, tol...), base, again)...)
	require.Zero(t, code, "stdout: %s\nstderr: %s", stdout, stderr)
	require.Contains(t, stdout, "verdict: unchanged")

	stdout, stderr, code = e2etest.RunCLI(t, append(append([]string{"compare"}, tol...), base, slower)...)
	require.Equal(t, 99, code, "stdout: %s\nstderr: %s", stdout, stderr)
	require.Contains(t, stdout, "verdict: regressed")
	require.Contains(t, stdout, "p50_ms of checkout")
	require.Contains(t, stderr, "regressed")

	// Looser tolerances let it pass; the JSON says the same as the table. The tails get room
	// for a machine loaded by other suites (a p95 of 200 ms for 130 was seen on a 2-core CI
	// machine), the median measures the change.
	stdout, _, code = e2etest.RunCLI(t, "compare", "--max-p50-regression", "50%", "--max-p95-regression", "300%", "--max-p99-regression", "300%",
		"--max-rps-regression", "50%", "--json", base, slower)
	require.Zero(t, code, "stdout: %s", stdout)
	var c struct {
		Verdict string
		Total   struct {
			Changes []struct {
				Metric, Verdict          string
				Base, New, Change, Noise float64
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &c))
	require.Equal(t, "unchanged", c.Verdict)
	// The change is what the two runs measured, each median at least its target's latency, and
	// more than the runs' own variation could make alone. (The verdicts above hold it between
	// 15% and 50%: 130 ms against 100 ms, and what the machine adds to both.)
	var p50 int
	for _, ch := range c.Total.Changes {
		if ch.Metric == "p50_ms" {
			p50++
			require.GreaterOrEqual(t, ch.Base, 100.0)
			require.GreaterOrEqual(t, ch.New, 130.0)
			require.InDelta(t, ch.New/ch.Base-1, ch.Change, 1e-9)
			require.Greater(t, ch.Change, ch.Noise, "130 ms against 100 ms")
		}
	}
	require.Equal(t, 1, p50)

	_, stderr, code = e2etest.RunCLI(t, "compare", "--max-p95-regression", "lots", base, slower)
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "want a percentage")
}
