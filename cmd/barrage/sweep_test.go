package main_test

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/e2etest"
	"github.com/barrage-load/barrage/internal/report/reporttest"
	"github.com/barrage-load/barrage/internal/targettest"
)

// A sweep against a target that serves 8 requests at a time finds the knee at 8 VUs, within one
// step; the CSV marks it and the report draws throughput and latency against concurrency. The
// target's 50 ms per request dominates what a loaded CI machine adds to it.
func TestSweepFindsTheKneeOfAFixedConcurrencyLimit(t *testing.T) {
	t.Parallel()
	target := targettest.NewLimited(t, 8, 50*time.Millisecond)
	script := e2etest.OneRequestScript(t, "work", target.URL, "{ vus: 1, duration: 1s }")
	dir := filepath.Dir(script)
	csvPath, page, out := filepath.Join(dir, "sweep.csv"), filepath.Join(dir, "sweep.html"), filepath.Join(dir, "sweep.json")
	stdout, stderr, code := e2etest.RunCLI(t, "sweep", "--vus", "2,4,8,16,32", "--step", "3s", "--csv", csvPath, "--report", page, "--out", out, script)
	require.Zero(t, code, "stdout: %s\nstderr: %s", stdout, stderr)

	var res struct {
		KneeVUs int `json:"knee_vus"`
		Levels  []struct {
			VUs int     `json:"vus"`
			RPS float64 `json:"rps"`
		}
		Fit *struct{ Sigma, Kappa, R2 float64 }
	}
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &res))
	require.Len(t, res.Levels, 5)
	require.Contains(t, []int{4, 8, 16}, res.KneeVUs, "the knee at 8 within one step; stdout: %s", stdout)
	require.NotNil(t, res.Fit)
	require.Greater(t, res.Fit.Kappa+res.Fit.Sigma, 0.0, "a limit is contention or crosstalk")
	// 8 workers of 50 ms serve 160/s, fewer on a machine whose timers wake up late: the level
	// past the knee runs at what the target itself measured it can serve.
	c := target.Capacity()
	require.InDelta(t, c, res.Levels[4].RPS, c/4, "8 workers serve %.1f/s", c)
	require.Contains(t, stdout, "knee: "+strconv.Itoa(res.KneeVUs)+" VUs")

	f, err := os.Open(csvPath)
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	require.Equal(t, []string{"vus", "seconds", "requests", "rps", "ok_rps", "p50_ms", "p95_ms", "p99_ms", "error_rate", "reliability",
		"generator", "late_start", "usl_rps", "knee", "stopped"}, rows[0])
	require.Len(t, rows, 6)
	knee := slices.IndexFunc(rows[1:], func(r []string) bool { return r[13] == "true" })
	require.Equal(t, strconv.Itoa(res.KneeVUs), rows[1+knee][0])
	require.Equal(t, "1.000000", rows[1][9], "every request succeeded")

	html, err := os.ReadFile(page)
	require.NoError(t, err)
	require.Contains(t, string(html), "Knee at "+strconv.Itoa(res.KneeVUs)+" VUs")
	p := reporttest.Open(t, html)
	require.Empty(t, p.Fetched)
	ink, charts := p.Ink()
	require.Equal(t, 2, charts)
	require.Greater(t, ink["chart-throughput"], 100)
	require.Greater(t, ink["chart-p95"], 100)

	_, stderr, code = e2etest.RunCLI(t, "sweep", "--vus", "8,4", script)
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "levels go up")
}
