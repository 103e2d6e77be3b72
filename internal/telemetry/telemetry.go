// Package telemetry is the server's and the agents' own metrics in the Prometheus text format,
// served on a listener of the operator's choosing. The server's: its HTTP requests by route and
// status with latency histograms, its runs by state and agents online, the delay from a second's
// end at an agent to its report, its database pool. An agent's: its shards running, the seconds
// it reported, its failed reports, its plugin starts and failures. Both: the Go runtime's and the
// process's.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Counts are the figures read from the database at each scrape.
type Counts interface {
	// RunsByState counts the runs in each state.
	RunsByState(ctx context.Context) (map[string]int64, error)
	// AgentsOnline counts the agents seen lately.
	AgentsOnline(ctx context.Context) (int64, error)
}

// Metrics holds the server's metrics.
type Metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	ingestLag prometheus.Histogram
}

// New registers the server's metrics: the counts read from counts and the pool's figures at each
// scrape (within 2 s; a failed read is logged and leaves them out), the Go runtime's and the
// process's.
func New(pool *pgxpool.Pool, counts Counts, log *slog.Logger) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "barrage_http_requests_total", Help: "HTTP requests answered, by route pattern, method and status.",
	}, []string{"route", "method", "code"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "barrage_http_request_duration_seconds", Help: "Time to answer HTTP requests, by route pattern and method.",
		Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
	}, []string{"route", "method"})
	m.ingestLag = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "barrage_ingest_lag_seconds", Help: "Delay from a second's end on an agent's schedule to its report reaching the server.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60},
	})
	m.reg.MustRegister(m.requests, m.duration, m.ingestLag,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&dbCollector{pool: pool, counts: counts, log: log})
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Request records an HTTP request answered with status after d; route is its pattern ("" when
// no route matched: one label for all of them, so that probes of unknown paths add no series).
func (m *Metrics) Request(route, method string, status int, d time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(route, method).Observe(d.Seconds())
}

// IngestLag records how long after a second's end its report reached the server.
func (m *Metrics) IngestLag(d time.Duration) { m.ingestLag.Observe(max(d, 0).Seconds()) }

// dbCollector reads the database's figures at each scrape.
type dbCollector struct {
	pool   *pgxpool.Pool
	counts Counts
	log    *slog.Logger
}

var (
	runsDesc     = prometheus.NewDesc("barrage_runs", "Runs, by state.", []string{"state"}, nil)
	agentsDesc   = prometheus.NewDesc("barrage_agents_online", "Enabled agents seen in the last 10 seconds.", nil, nil)
	acquiredDesc = prometheus.NewDesc("barrage_db_pool_acquired_connections", "Database connections in use.", nil, nil)
	idleDesc     = prometheus.NewDesc("barrage_db_pool_idle_connections", "Idle database connections.", nil, nil)
	maxDesc      = prometheus.NewDesc("barrage_db_pool_max_connections", "The pool's size.", nil, nil)
	acquiresDesc = prometheus.NewDesc("barrage_db_pool_acquires_total", "Connections acquired from the pool.", nil, nil)
	waitsDesc    = prometheus.NewDesc("barrage_db_pool_empty_acquires_total", "Acquires that waited for a connection.", nil, nil)
	waitDesc     = prometheus.NewDesc("barrage_db_pool_acquire_seconds_total", "Time spent acquiring connections.", nil, nil)
)

func (c *dbCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{runsDesc, agentsDesc, acquiredDesc, idleDesc, maxDesc, acquiresDesc, waitsDesc, waitDesc} {
		ch <- d
	}
}

func (c *dbCollector) Collect(ch chan<- prometheus.Metric) {
	if c.pool != nil {
		st := c.pool.Stat()
		ch <- prometheus.MustNewConstMetric(acquiredDesc, prometheus.GaugeValue, float64(st.AcquiredConns()))
		ch <- prometheus.MustNewConstMetric(idleDesc, prometheus.GaugeValue, float64(st.IdleConns()))
		ch <- prometheus.MustNewConstMetric(maxDesc, prometheus.GaugeValue, float64(st.MaxConns()))
		ch <- prometheus.MustNewConstMetric(acquiresDesc, prometheus.CounterValue, float64(st.AcquireCount()))
		ch <- prometheus.MustNewConstMetric(waitsDesc, prometheus.CounterValue, float64(st.EmptyAcquireCount()))
		ch <- prometheus.MustNewConstMetric(waitDesc, prometheus.CounterValue, st.AcquireDuration().Seconds())
	}
	if c.counts == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if runs, err := c.counts.RunsByState(ctx); err != nil {
		c.log.Warn("metrics: count runs", slog.String("error", err.Error()))
	} else {
		for state, n := range runs {
			ch <- prometheus.MustNewConstMetric(runsDesc, prometheus.GaugeValue, float64(n), state)
		}
	}
	if n, err := c.counts.AgentsOnline(ctx); err != nil {
		c.log.Warn("metrics: count agents", slog.String("error", err.Error()))
	} else {
		ch <- prometheus.MustNewConstMetric(agentsDesc, prometheus.GaugeValue, float64(n))
	}
}

// Listen serves h at /metrics on addr, apart from anything else, until the returned stop is
// called; it returns the address it listens on.
func Listen(addr string, h http.Handler, log *slog.Logger) (string, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener", slog.String("error", err.Error()))
		}
	}()
	return ln.Addr().String(), func() { srv.Close() }, nil
}

// Agent holds an agent's metrics. Its methods do nothing on a nil *Agent, so an agent without
// metrics calls them all the same.
type Agent struct {
	reg            *prometheus.Registry
	shards         prometheus.Gauge
	seconds        prometheus.Counter
	reportFailures prometheus.Counter
	pluginStarts   *prometheus.CounterVec
}

// NewAgent registers an agent's metrics: its shards running, the seconds it reported, its
// failed reports, its plugin sets started and failed, the Go runtime's and the process's.
func NewAgent() *Agent {
	m := &Agent{reg: prometheus.NewRegistry(),
		shards: prometheus.NewGauge(prometheus.GaugeOpts{Name: "barrage_agent_shards_running", Help: "Shards of runs this agent is running."}),
		seconds: prometheus.NewCounter(prometheus.CounterOpts{Name: "barrage_agent_seconds_reported_total",
			Help: "Seconds of metrics the server acknowledged."}),
		reportFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "barrage_agent_report_failures_total",
			Help: "Reports to the server that failed (and were retried)."}),
		pluginStarts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "barrage_agent_plugin_starts_total",
			Help: "Starts of a shard's plugins, by result (ok, failed)."}, []string{"result"}),
	}
	m.reg.MustRegister(m.shards, m.seconds, m.reportFailures, m.pluginStarts,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the agent's metrics in the Prometheus text format.
func (m *Agent) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// ShardStarted and ShardEnded count the shards running.
func (m *Agent) ShardStarted() {
	if m != nil {
		m.shards.Inc()
	}
}

func (m *Agent) ShardEnded() {
	if m != nil {
		m.shards.Dec()
	}
}

// Reported counts seconds the server acknowledged; a non-nil err, a failed report.
func (m *Agent) Reported(seconds int, err error) {
	switch {
	case m == nil:
	case err != nil:
		m.reportFailures.Inc()
	default:
		m.seconds.Add(float64(seconds))
	}
}

// PluginsStarted counts a shard's plugins started, or failing to (err).
func (m *Agent) PluginsStarted(err error) {
	if m == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = "failed"
	}
	m.pluginStarts.WithLabelValues(result).Inc()
}
