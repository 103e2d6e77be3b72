package monitor_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/monitor"
	"github.com/barrage-load/barrage/internal/script"
)

// exporter serves what body returns, which the test changes between scrapes.
type exporter struct {
	mu     sync.Mutex
	body   string
	status int
}

func (e *exporter) set(status int, body string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.status, e.body = status, body
}

func (e *exporter) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	w.WriteHeader(e.status)
	fmt.Fprint(w, e.body)
}

func node(iowait, idle, load, requests float64) string {
	return fmt.Sprintf(`# TYPE node_cpu_seconds_total counter
node_cpu_seconds_total{cpu="0",mode="iowait"} %g
node_cpu_seconds_total{cpu="0",mode="idle"} %g
node_cpu_seconds_total{cpu="1",mode="iowait"} %g
node_cpu_seconds_total{cpu="1",mode="idle"} %g
# TYPE node_load1 gauge
node_load1 %g
# TYPE http_requests_total counter
http_requests_total{code="200"} %g
http_requests_total{code="500"} 1
`, iowait, idle, iowait, idle, load, requests)
}

func selectors(t *testing.T, srcs ...string) []*script.MonitorSeries {
	var out []*script.MonitorSeries
	for _, s := range srcs {
		sel, err := script.ParseMonitorSeries(s)
		require.NoError(t, err)
		out = append(out, sel)
	}
	return out
}

// A second's value is a counter's rate, a gauge's value, a CPU mode's share of all CPU time;
// a failed scrape, a counter's first reading or reset, and a series not found have none.
func TestScrapesTellRatesValuesAndShares(t *testing.T) {
	t.Parallel()
	exp := &exporter{}
	srv := httptest.NewServer(exp)
	t.Cleanup(srv.Close)
	m := &script.Monitor{Name: "node", URL: srv.URL + "/metrics", Series: selectors(t,
		`node_cpu_seconds_total{mode="iowait"}`, "node_load1", `http_requests_total{code="200"}`, "http_requests_total", "absent")}
	s := monitor.New([]*script.Monitor{m}, monitor.Client(nil))
	ctx := context.Background()
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	sec := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }

	exp.set(200, node(10, 90, 1.5, 1000))
	s.Scrape(ctx, -1, sec(0))
	exp.set(200, node(10.6, 90.4, 2.5, 1300)) // each CPU: 0.6 s iowait, 0.4 s idle
	s.Scrape(ctx, 0, sec(1))
	exp.set(500, "down")
	s.Scrape(ctx, 1, sec(2))
	exp.set(200, node(11.2, 90.8, 0.5, 100)) // the requests counter restarted
	s.Scrape(ctx, 2, sec(3))
	exp.set(200, node(11.3, 91.7, 0.5, 400))
	s.Scrape(ctx, 3, sec(4))

	got := map[string][]any{}
	units := map[string]string{}
	for _, ser := range s.Series() {
		units[ser.Series] = ser.Unit
		for _, v := range ser.Values {
			if v == nil {
				got[ser.Series] = append(got[ser.Series], nil)
			} else {
				got[ser.Series] = append(got[ser.Series], *v)
			}
		}
	}
	require.Equal(t, []any{60.0, nil, 60.0, 10.0}, round(got[`node_cpu_seconds_total{mode="iowait"}`]), "over two seconds across the failure")
	require.Equal(t, monitor.UnitPercent, units[`node_cpu_seconds_total{mode="iowait"}`])
	require.Equal(t, []any{2.5, nil, 0.5, 0.5}, got["node_load1"])
	require.Equal(t, monitor.UnitValue, units["node_load1"])
	require.Equal(t, []any{300.0, nil, nil, 300.0}, round(got[`http_requests_total{code="200"}`]))
	require.Equal(t, monitor.UnitPerSecond, units[`http_requests_total{code="200"}`])
	require.Equal(t, []any{300.0, nil, nil, 300.0}, round(got["http_requests_total"]), "both codes summed; the 500s stayed at 1")
	require.Equal(t, []any{nil, nil, nil, nil}, got["absent"])
	fails := s.Failures()
	require.Len(t, fails, 1)
	require.Equal(t, 1, fails[0].Failed)
	require.Contains(t, fails[0].LastError, "500")
}

func round(vs []any) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		if f, ok := v.(float64); ok {
			out[i] = float64(int64(f*1000+0.5)) / 1000
		}
	}
	return out
}

// What is not a metrics endpoint fails its scrape with a reason: another format, a redirect
// (not followed), a body over the cap.
func TestScrapesRefuseWhatIsNotAnEndpoint(t *testing.T) {
	t.Parallel()
	var followed bool
	mux := http.NewServeMux()
	mux.HandleFunc("/html", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "<html>{not: metrics}</html>") })
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/elsewhere", http.StatusFound) })
	mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, _ *http.Request) { followed = true })
	mux.HandleFunc("/huge", func(w http.ResponseWriter, _ *http.Request) {
		line := strings.Repeat("x", 100) + " 1\n"
		for range (5 << 20) / len(line) {
			fmt.Fprint(w, line)
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	var ms []*script.Monitor
	for _, p := range []string{"html", "moved", "huge"} {
		ms = append(ms, &script.Monitor{Name: p, URL: srv.URL + "/" + p, Series: selectors(t, "up")})
	}
	client := monitor.Client(nil)
	client.Timeout = time.Minute // what is refused here is the answer, not its time: a loaded machine may be slow to send 4 MiB
	s := monitor.New(ms, client)
	s.Scrape(context.Background(), -1, time.Now())
	fails := s.Failures()
	require.Len(t, fails, 3)
	require.Contains(t, fails[0].LastError, "not the Prometheus text format")
	require.Contains(t, fails[1].LastError, "302")
	require.False(t, followed)
	require.Contains(t, fails[2].LastError, "over 4 MiB")
}
