package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/engine"
	"github.com/barrage-load/barrage/internal/monitor"
	"github.com/barrage-load/barrage/internal/pipeline"
	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/internal/sweep"
)

// target answers / and serves a gauge at /metrics.
func target(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") })
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "# TYPE queue gauge\nqueue 7\n") })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func parse(t *testing.T, src, url string) *script.Script {
	t.Helper()
	s, err := script.Parse([]byte(strings.ReplaceAll(src, "${target}", url)), script.ParseOptions{})
	require.NoError(t, err)
	return s
}

const withMonitor = `
version: 1
name: pipeline
session:
  groups:
    - name: g
      requests:
        - { name: home, url: "${target}/", think: 100ms }
load: { vus: 2, duration: 2s }
monitors:
  - name: app
    url: ${target}/metrics
    series: [queue]
`

// A run's outcome is its result, its account and the monitors scraped beside it on its schedule.
func TestARunsOutcomeHasItsAccountAndItsMonitors(t *testing.T) {
	url := target(t)
	var seconds int
	l, err := pipeline.Start(context.Background(), parse(t, withMonitor, url), pipeline.Options{
		Engine:   engine.Options{OnSecond: func(run.Second) { seconds++ }},
		Monitors: monitor.Client(nil),
	})
	require.NoError(t, err)
	out := l.Wait()
	require.NotNil(t, out.Result)
	require.Equal(t, run.Completed, out.Stop.Reason)
	require.Positive(t, out.Result.Iterations)
	require.Equal(t, out.Result.Iterations, out.Account.Iterations, "the account is the result's")
	require.Len(t, out.Result.Seconds, seconds, "every second went to OnSecond before the outcome")
	require.Len(t, out.Monitors, 1)
	require.NotEmpty(t, out.Monitors[0].Values, "the monitor was scraped while the load went")
	require.Empty(t, out.Account.MonitorFailures)
}

// A sweep's outcome carries its levels in its account, as an agent reports them; a sweep
// stopped says why, with the levels it ran.
func TestASweepsOutcomeCarriesItsLevels(t *testing.T) {
	url := target(t)
	s := parse(t, strings.Replace(withMonitor, "think: 100ms", "think: 20ms", 1), url)
	l, err := pipeline.Start(context.Background(), s, pipeline.Options{Engine: engine.Options{Sweep: &barrage.Sweep{VUs: []int{1, 2}, Step: time.Second}}})
	require.NoError(t, err)
	out := l.Wait()
	require.NoError(t, out.Err)
	require.Nil(t, out.Result)
	require.Len(t, out.Sweep.Levels, 2)
	var levels []sweep.Level
	require.NoError(t, json.Unmarshal(out.Account.SweepLevels, &levels))
	require.Equal(t, out.Sweep.Levels, levels)

	long := *s
	l, err = pipeline.Start(context.Background(), &long, pipeline.Options{Engine: engine.Options{Sweep: &barrage.Sweep{VUs: []int{1, 2}, Step: time.Hour}}})
	require.NoError(t, err)
	l.Stop(run.Canceled, "enough")
	out = l.Wait()
	require.Equal(t, run.Stop{Reason: run.Canceled, Detail: "enough"}, out.Stop)
}
