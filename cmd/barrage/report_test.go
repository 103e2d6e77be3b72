package main_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/e2etest"
	"github.com/barrage-load/barrage/internal/report/reporttest"
)

// `barrage run --report` writes the run's report; `barrage report` writes one from --out's
// document, held against a base when asked. Opened in Chromium with no network, the run's
// charts draw, errors by class among them.
func TestRunWritesAReportThatDrawsOffline(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1)%4 == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	// The target's own metrics: a counter of its requests and a gauge. It keeps what it said
	// when, the first reading then one a second, to tell the rate it served between two.
	type scrape struct {
		n  int64
		at time.Time
	}
	var mu sync.Mutex
	var scrapes []scrape
	metricsSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		sc := scrape{n.Load(), time.Now()}
		scrapes = append(scrapes, sc)
		fmt.Fprintf(w, "# TYPE app_requests_total counter\napp_requests_total %d\n# TYPE app_in_flight gauge\napp_in_flight 3\n", sc.n)
	}))
	t.Cleanup(metricsSrv.Close)
	script := e2etest.OneRequestScript(t, "get home", srv.URL, "{ rate: 50/s, duration: 4s, max_vus: 10 }\nthresholds: [ \"p95 < 2s\" ]\n"+
		"monitors: [ { name: app, url: \""+metricsSrv.URL+"/metrics\", series: [ app_requests_total, app_in_flight ] } ]")
	dir := filepath.Dir(script)
	out, page := filepath.Join(dir, "result.json"), filepath.Join(dir, "run.html")
	_, stderr, code := e2etest.RunCLI(t, "run", "--quiet", "--out", out, "--report", page, script)
	require.Zero(t, code, "stderr: %s", stderr)
	html, err := os.ReadFile(page)
	require.NoError(t, err)
	require.Contains(t, string(html), "<td>get home</td>")
	require.Contains(t, string(html), "<td>5xx</td>")

	var res struct {
		Monitors []struct {
			Series string
			Unit   string
			Values []*float64
		}
	}
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &res))
	require.Len(t, res.Monitors, 2)
	require.Equal(t, "per second", res.Monitors[0].Unit)
	// The counter's rate, second by second: what the target served between the second's two
	// readings, over the time between them as the target saw them (the scraper's clock, which
	// the rate is over, sees them a request's trip earlier).
	mu.Lock()
	rates := 0
	for k, v := range res.Monitors[0].Values {
		if v == nil || k+1 >= len(scrapes) {
			continue
		}
		from, to := scrapes[k], scrapes[k+1]
		served := float64(to.n-from.n) / to.at.Sub(from.at).Seconds()
		require.InDelta(t, served, *v, served/4, "second %d: the target served %.1f requests a second", k, served)
		rates++
	}
	mu.Unlock()
	require.GreaterOrEqual(t, rates, 2, "the counter's rate, second by second")
	require.InDelta(t, 3.0, *res.Monitors[1].Values[0], 1e-12)
	require.GreaterOrEqual(t, len(res.Monitors[1].Values), 4, "a value for each whole second of the 4 s run, the last one too")

	p := reporttest.Open(t, html)
	require.Empty(t, p.Fetched)
	ink, charts := p.Ink()
	require.Equal(t, 6, charts, "4 of the run, 2 of the monitor (a unit each); dom: %.2000s", p.DOM)
	require.Contains(t, ink, "chart-monitor-0")
	require.Contains(t, ink, "chart-monitor-1")
	for id, n := range ink {
		require.Greater(t, n, 100, "%s drew", id)
	}

	// From the document, against itself as the base: unchanged, the base drawn too.
	stdout, stderr, code := e2etest.RunCLI(t, "report", "--base", out, out, "-o", filepath.Join(dir, "again.html"))
	require.Zero(t, code, "stderr: %s", stderr)
	require.Contains(t, stdout, "again.html")
	again, err := os.ReadFile(filepath.Join(dir, "again.html"))
	require.NoError(t, err)
	require.Contains(t, string(again), "Against result.json: unchanged.")
	require.Contains(t, string(again), `"base":{"second":[1,`)

	// Without -o the report goes beside the document.
	_, stderr, code = e2etest.RunCLI(t, "report", out)
	require.Zero(t, code, "stderr: %s", stderr)
	require.FileExists(t, filepath.Join(dir, "result.html"))

	_, stderr, code = e2etest.RunCLI(t, "report", script)
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "is not a result of barrage run --out")
	emptyDoc := filepath.Join(dir, "empty.json")
	require.NoError(t, os.WriteFile(emptyDoc, []byte("{}"), 0o644))
	_, stderr, code = e2etest.RunCLI(t, "report", emptyDoc)
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "it has no start, model or series")

	// A report that cannot be written leaves the file it would have replaced as it was.
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	doc["series"].([]any)[0].(map[string]any)["second"] = 1e15
	spoiled, err := json.Marshal(doc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "spoiled.json"), spoiled, 0o644))
	_, stderr, code = e2etest.RunCLI(t, "report", "-o", page, filepath.Join(dir, "spoiled.json"))
	require.NotZero(t, code)
	require.Contains(t, stderr, "not a second of a run")
	kept, err := os.ReadFile(page)
	require.NoError(t, err)
	require.Equal(t, html, kept)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		require.False(t, strings.HasPrefix(e.Name(), "."), "no temporary file left: %s", e.Name())
	}

	// A report's folder is checked before the run, not after it.
	_, stderr, code = e2etest.RunCLI(t, "run", "--quiet", "--report", filepath.Join(dir, "absent", "r.html"), script)
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "no folder")
}
