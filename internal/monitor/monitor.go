// Package monitor scrapes the target's own metrics beside the load: Prometheus text endpoints
// (node_exporter, postgres_exporter, the target's /metrics) named by a script's monitors, once a
// second, into one value per series and second. A counter is kept as its per-second rate; a
// gauge (or an untyped sample) as its value; the samples a selector matches are summed; and
// node_cpu_seconds_total with a mode is told as the share of all CPU time in that mode, in
// percent, the figure people read iowait in.
package monitor

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/barrage-load/barrage/internal/script"
)

// The units a series' values are in.
const (
	UnitValue     = "value"
	UnitPerSecond = "per second"
	UnitPercent   = "percent"
)

// maxBody bounds one scrape's body: node_exporter's is about 100 KiB.
const maxBody = 4 << 20

// Series is one monitor series' values, one per second of the run (from its first second).
type Series struct {
	Monitor string `json:"monitor"`
	Series  string `json:"series"` // the selector as written
	Unit    string `json:"unit"`
	// Values has a value per second; nil where there was none (a failed scrape, the first
	// scrape of a counter, a counter reset, a selector that matched nothing).
	Values []*float64 `json:"values"`
}

// Failure is a monitor whose scrapes failed, with how many did and the last reason.
type Failure struct {
	Monitor   string `json:"monitor"`
	Failed    int    `json:"failed"`
	LastError string `json:"last_error"`
}

// Scraper scrapes monitors every second. Its methods may not be called concurrently.
type Scraper struct {
	// OnValues, when set, receives each second's values as it is scraped, the series of every
	// monitor in the script's order (as Series lists them), with their units.
	OnValues func(index int64, values []*float64, units []string)

	client   *http.Client
	monitors []*script.Monitor
	series   []*Series // every monitor's series, in the script's order
	prev     []scrape  // each monitor's last scrape
	failures []Failure
}

// scrape is one monitor's raw sums at one time: per selector, the matched sum, whether its
// metric grows as a counter does and, for a CPU mode share, the sum over every mode.
type scrape struct {
	at       time.Time
	ok       bool
	matched  []float64
	found    []bool
	counter  []bool
	allModes []float64
}

// cpuModeShare reports whether sel is told as a share of CPU time: node_cpu_seconds_total of a
// mode.
func cpuModeShare(sel *script.MonitorSeries) bool {
	_, mode := sel.Labels["mode"]
	return mode && sel.Metric == "node_cpu_seconds_total"
}

// New is a scraper of ms that fetches with client (whose timeout should be under a second and
// whose dialer follows the run's network policy).
func New(ms []*script.Monitor, client *http.Client) *Scraper {
	s := &Scraper{client: client, monitors: ms, prev: make([]scrape, len(ms)), failures: make([]Failure, len(ms))}
	for i, m := range ms {
		s.failures[i].Monitor = m.Name
		for _, sel := range m.Series {
			s.series = append(s.series, &Series{Monitor: m.Name, Series: sel.Source, Unit: UnitValue, Values: []*float64{}})
		}
	}
	return s
}

// Run scrapes at start (a counter's first reading; it waits for a start to come) and then at
// each whole second after it, the value of the second that ended, until ctx ends.
//
// Ending ctx stops the waiting, not a scrape under way (it has its client's timeout): the second
// that ended with the run keeps its value.
func (s *Scraper) Run(ctx context.Context, start time.Time) {
	scrapes := context.WithoutCancel(ctx)
	t := time.NewTimer(time.Until(start))
	select {
	case <-ctx.Done():
		t.Stop()
		return
	case <-t.C:
	}
	s.Scrape(scrapes, -1, start)
	for i := int64(0); ; i++ {
		t := time.NewTimer(time.Until(start.Add(time.Duration(i+1) * time.Second)))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case now := <-t.C:
			s.Scrape(scrapes, i, now)
		}
	}
}

// Scrape reads every monitor at now, concurrently, and records the values of the second of
// index (0 for the first); -1 takes the first readings only.
func (s *Scraper) Scrape(ctx context.Context, index int64, now time.Time) {
	next := make([]scrape, len(s.monitors))
	errs := make([]error, len(s.monitors))
	var wg sync.WaitGroup
	for i, m := range s.monitors {
		wg.Go(func() { next[i], errs[i] = s.read(ctx, m, now) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		return // stopped: a scrape cut short is no failure and no value
	}
	var vals []*float64
	var units []string
	for i, m := range s.monitors {
		if errs[i] != nil {
			s.failures[i].Failed++
			s.failures[i].LastError = errs[i].Error()
		}
		if index < 0 {
			s.prev[i] = next[i]
			continue
		}
		for j, sel := range m.Series {
			v, unit := value(s.prev[i], next[i], j, sel)
			vals, units = append(vals, v), append(units, unit)
		}
		if next[i].ok {
			s.prev[i] = next[i]
		}
	}
	if index < 0 {
		return
	}
	Record(s.series, index, vals, units)
	if s.OnValues != nil {
		for k, ser := range s.series {
			units[k] = ser.Unit // the unit known from an earlier scrape, where this one had none
		}
		s.OnValues(index, vals, units)
	}
}

// value is a selector's value for the second from prev to cur, and its unit ("" when there
// is no value to tell it by).
func value(prev, cur scrape, j int, sel *script.MonitorSeries) (*float64, string) {
	if !cur.ok || !cur.found[j] {
		return nil, ""
	}
	if cpuModeShare(sel) {
		if !prev.ok || !prev.found[j] {
			return nil, UnitPercent
		}
		dm, da := cur.matched[j]-prev.matched[j], cur.allModes[j]-prev.allModes[j]
		if dm < 0 || da <= 0 {
			return nil, UnitPercent // a reset
		}
		v := dm / da * 100
		return &v, UnitPercent
	}
	if cur.counter[j] {
		if !prev.ok || !prev.found[j] {
			return nil, UnitPerSecond
		}
		d, dt := cur.matched[j]-prev.matched[j], cur.at.Sub(prev.at).Seconds()
		if d < 0 || dt <= 0 {
			return nil, UnitPerSecond
		}
		v := d / dt
		return &v, UnitPerSecond
	}
	v := cur.matched[j]
	return &v, UnitValue
}

// read fetches m and sums each selector's samples.
func (s *Scraper) read(ctx context.Context, m *script.Monitor, now time.Time) (scrape, error) {
	n := len(m.Series)
	sc := scrape{at: now, matched: make([]float64, n), found: make([]bool, n), counter: make([]bool, n), allModes: make([]float64, n)}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.URL, nil)
	if err != nil {
		return sc, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	res, err := s.client.Do(req)
	if err != nil {
		return sc, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return sc, fmt.Errorf("%s answered %s", m.URL, res.Status)
	}
	// Read whole (and at most maxBody) before parsing: an endpoint that sends too much is
	// refused at once, not after parsing what it sent.
	body, err := io.ReadAll(io.LimitReader(res.Body, maxBody+1))
	if err != nil {
		return sc, fmt.Errorf("%s: %w", m.URL, err)
	}
	if len(body) > maxBody {
		return sc, fmt.Errorf("%s: the answer is over %d MiB", m.URL, maxBody>>20)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return sc, fmt.Errorf("%s: not the Prometheus text format: %v", m.URL, err)
	}
	for j, sel := range m.Series {
		fam := families[sel.Metric]
		if fam == nil {
			continue
		}
		// A summary's or histogram's sum grows as a counter does.
		sc.counter[j] = fam.GetType() == dto.MetricType_COUNTER || fam.GetType() == dto.MetricType_SUMMARY ||
			fam.GetType() == dto.MetricType_HISTOGRAM || (fam.GetType() == dto.MetricType_UNTYPED && strings.HasSuffix(sel.Metric, "_total"))
		modeShare := cpuModeShare(sel)
		for _, metric := range fam.GetMetric() {
			v := sampleValue(metric)
			if matches(metric, sel.Labels, "") {
				sc.matched[j] += v
				sc.found[j] = true
			}
			if modeShare && matches(metric, sel.Labels, "mode") {
				sc.allModes[j] += v
			}
		}
	}
	sc.ok = true
	return sc, nil
}

// matches reports whether metric has every label of want but the one named except.
func matches(metric *dto.Metric, want map[string]string, except string) bool {
	have := make(map[string]string, len(metric.GetLabel()))
	for _, l := range metric.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if k != except && have[k] != v {
			return false
		}
	}
	return true
}

// sampleValue is a sample's value; a summary's or histogram's is its sum.
func sampleValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	case m.Summary != nil:
		return m.Summary.GetSampleSum()
	case m.Histogram != nil:
		return m.Histogram.GetSampleSum()
	}
	return 0
}

// Series are the values kept, monitor by monitor, in the script's order.
func (s *Scraper) Series() []*Series { return s.series }

// Failures are the monitors some of whose scrapes failed.
func (s *Scraper) Failures() []Failure {
	var out []Failure
	for _, f := range s.failures {
		if f.Failed > 0 {
			out = append(out, f)
		}
	}
	return out
}

// Start scrapes ms with client from start, in the background, until the returned stop is
// called; each second's values go to onValues too, when it is set. stop returns what was kept
// and the monitors that failed.
func Start(ctx context.Context, ms []*script.Monitor, client *http.Client, start time.Time,
	onValues func(int64, []*float64, []string)) (stop func() ([]*Series, []Failure)) {
	s := New(ms, client)
	s.OnValues = onValues
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx, start)
	}()
	return func() ([]*Series, []Failure) {
		cancel()
		<-done
		// The run's last whole second, when it ended a moment before its scrape was due.
		if recorded, whole := s.recorded(), int64(time.Since(start)/time.Second); recorded < whole && !start.After(time.Now()) {
			s.Scrape(context.Background(), recorded, time.Now())
		}
		return s.Series(), s.Failures()
	}
}

// recorded is how many seconds have a value (or none) recorded.
func (s *Scraper) recorded() int64 {
	var n int64
	for _, ser := range s.Series() {
		n = max(n, int64(len(ser.Values)))
	}
	return n
}

// Client is the HTTP client monitors are scraped with: a scrape gives up after 800 ms (the next
// is due at the second's end), follows no redirect and goes through no proxy; dial, when set,
// makes its connections (an agent's, which follows its network policy).
func Client(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Client {
	tr := &http.Transport{Proxy: nil, DialContext: dial, MaxIdleConnsPerHost: 2, IdleConnTimeout: 30 * time.Second}
	return &http.Client{
		Transport:     tr,
		Timeout:       800 * time.Millisecond,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Skeleton is the series of ms with no value yet, in the order Scraper.Series gives them.
func Skeleton(ms []*script.Monitor) []*Series { return New(ms, nil).Series() }

// Record sets the values of the second of index in series (in Skeleton's order), with their
// units; seconds before it without one are left without a value.
func Record(series []*Series, index int64, values []*float64, units []string) {
	for i, ser := range series {
		if i >= len(values) {
			return
		}
		for int64(len(ser.Values)) < index {
			ser.Values = append(ser.Values, nil)
		}
		if int64(len(ser.Values)) > index {
			continue // recorded already
		}
		ser.Values = append(ser.Values, values[i])
		if i < len(units) && units[i] != "" {
			ser.Unit = units[i]
		}
	}
}
