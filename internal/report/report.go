// Package report writes a run's results as one self-contained HTML page: charts of its seconds
// (requests/s, response-time percentiles, errors by class, active VUs and the generators' CPU),
// its tables, thresholds, stability and verdict, and, when it is held against a base run, the
// comparison drawn on the same charts. The page needs no network to be read: the charting
// library (uPlot, vendored in assets/) and the data are inlined, and its Content-Security-Policy
// forbids any fetch. It prints cleanly to PDF.
package report

import (
	"cmp"
	"embed"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/monitor"
	"github.com/barrage-load/barrage/internal/summary"
	"github.com/barrage-load/barrage/internal/sweep"
)

// Agent is one generator's part in a run on the server.
type Agent struct {
	Name        string          `json:"name"`
	State       string          `json:"state"`
	Reason      string          `json:"reason,omitempty"`
	Requests    int64           `json:"requests"`
	Seconds     int             `json:"seconds"`
	LateStartMS int64           `json:"late_start_ms"`
	Verdict     summary.Verdict `json:"verdict"`
}

// Report is what a report tells.
type Report struct {
	// Title heads the page: the script's name, or the run's.
	Title string
	// State and Reason are how a run on the server ended, which the page leads with when it
	// did not finish; empty for a local run.
	State, Reason string
	// Run is the run reported on; its Series draws the charts.
	Run *summary.Result
	// Agents are the generators of a run on the server, none for a local run.
	Agents []Agent
	// Uncounted are the agents whose iterations, dropped and interrupted arrivals the page
	// cannot count: they sent no end of their shard (lost).
	Uncounted []string
	// Base, when set, is the run Run is held against: its series is drawn beside Run's, and
	// Comparison is the verdict.
	Base       *summary.Result
	BaseTitle  string
	Comparison *summary.Comparison
	// Trend, of a run of a test on the server, is the test's last runs; RunID names this one
	// among them.
	Trend *summary.Trend
	RunID uuid.UUID
	// Version is the barrage that wrote the page.
	Version string
	// Generated is when the page was written.
	Generated time.Time
}

// ContentSecurityPolicy is the page's policy, in its head and on the server's answer: its inline
// scripts and styles run, nothing is fetched.
const ContentSecurityPolicy = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"

//go:embed assets/uPlot.iife.min.js
var uplotJS string

//go:embed assets/uPlot.min.css
var uplotCSS string

//go:embed *.tmpl
var templates embed.FS

//go:embed charts.js
var chartsJS string

//go:embed report.js
var reportJS string

//go:embed sweep.js
var sweepJS string

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"ms":  summary.MillisText,
	"pct": func(v float64) string { return fmt.Sprintf("%.2f%%", v*100) },
	"seconds": func(v float64) string {
		return time.Duration(v * float64(time.Second)).Round(time.Millisecond).String()
	},
	"figure": summary.Figure,
	"change": change,
	"join":   strings.Join,
	"failedThresholds": func(ts []summary.Threshold) []string {
		var out []string
		for _, t := range ts {
			if !t.Passed {
				out = append(out, t.Check)
			}
		}
		return out
	},
	"failedChecks": func(cs []summary.Check) []string {
		var out []string
		for _, c := range cs {
			if c.Fails > 0 {
				out = append(out, fmt.Sprintf("%s: %s (%d of %d responses)", c.Request, c.Name, c.Fails, c.Passes+c.Fails))
			}
		}
		return out
	},
	"fitted": func(s *sweep.Result, vus int) string { return cmp.Or(s.Fitted(vus), "-") },
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	},
	"classes": errorClasses,
	"mul100":  func(v float64) float64 { return v * 100 },
	"prepend": func(first summary.LabelComparison, rest []summary.LabelComparison) []summary.LabelComparison {
		return append([]summary.LabelComparison{first}, rest...)
	},
	"tolerance": func(ch summary.Change) string {
		if ch.Metric == "error_rate" {
			return fmt.Sprintf("%.2f pt", ch.Tolerance*100)
		}
		return fmt.Sprintf("%.0f%%", ch.Tolerance*100)
	},
}).ParseFS(templates, "*.tmpl"))

// Write writes r's page to w.
func (r Report) Write(w io.Writer) error {
	if r.Run == nil {
		return fmt.Errorf("report: no run to report on")
	}
	for _, res := range []*summary.Result{r.Run, r.Base} {
		if res == nil {
			continue
		}
		if err := check(res); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	data := map[string]any{
		"run":      chartData(r.Run),
		"title":    r.Title,
		"baseName": r.BaseTitle,
	}
	if r.Run.Stability != nil {
		data["steady"] = []int64{r.Run.Stability.FromS, r.Run.Stability.ToS}
	}
	if r.Base != nil {
		data["base"] = chartData(r.Base)
	}
	data["monitors"] = monitorCharts(r.Run.Monitors)
	return execute(w, "report.html.tmpl", r.Title, data, map[string]any{"R": r, "ReportJS": template.JS(reportJS)})
}

// execute writes the page of template name, titled title, charting data: with what every page
// carries (its policy, the charting library and the charts' helpers) beside fields.
func execute(w io.Writer, name, title string, data any, fields map[string]any) error {
	fields["Title"], fields["Data"], fields["CSP"] = title, data, ContentSecurityPolicy
	fields["UplotJS"], fields["UplotCSS"], fields["ChartsJS"] = template.JS(uplotJS), template.CSS(uplotCSS), template.JS(chartsJS)
	return page.ExecuteTemplate(w, name, fields)
}

// series is a run's seconds column by column, as uPlot takes them.
type series struct {
	Second []int64            `json:"second"`
	RPS    []float64          `json:"rps"`
	P50    []float64          `json:"p50"`
	P95    []float64          `json:"p95"`
	P99    []float64          `json:"p99"`
	VUs    []int64            `json:"vus"`
	CPU    []float64          `json:"cpu"` // percent
	Errors map[string][]int64 `json:"errors"`
}

// chartData is r's series in columns: every second from the first to the last (a second
// without a point had no request), each error class that failed a request in one of them. A
// last second that lasted less than half a second is left out: its rate, over so short a time,
// would be a spike no one saw.
func chartData(r *summary.Result) series {
	var last int64
	for _, p := range r.Series {
		last = max(last, p.Second)
	}
	if last > 1 && r.ElapsedS-float64(last-1) < 0.5 {
		last--
	}
	s := series{Second: []int64{}, RPS: []float64{}, P50: []float64{}, P95: []float64{}, P99: []float64{}, VUs: []int64{},
		CPU: []float64{}, Errors: map[string][]int64{}}
	for c := range errorClassSet(r.Series) {
		s.Errors[c] = make([]int64, last)
	}
	byIndex := make(map[int64]summary.Point, len(r.Series))
	for _, p := range r.Series {
		if p.Second <= last {
			byIndex[p.Second] = p
		}
	}
	for sec := int64(1); sec <= last; sec++ {
		p := byIndex[sec]
		s.Second = append(s.Second, sec)
		s.RPS = append(s.RPS, p.RPS)
		s.P50 = append(s.P50, p.P50MS)
		s.P95 = append(s.P95, p.P95MS)
		s.P99 = append(s.P99, p.P99MS)
		s.VUs = append(s.VUs, p.VUs)
		s.CPU = append(s.CPU, min(max(p.CPU, 0), 1)*100)
		for c, n := range p.ErrorsByClass {
			if n > 0 {
				s.Errors[c][sec-1] = n
			}
		}
	}
	return s
}

// MaxSeconds is the longest run a report draws, in seconds: a week and a day, past the longest
// run the server takes.
const MaxSeconds = 8 * 24 * 3600

// check refuses a result no run could have written, before anything is drawn of it: a second
// outside the run, a figure that is not a finite number.
func check(r *summary.Result) error {
	if math.IsNaN(r.ElapsedS) || r.ElapsedS < 0 || r.ElapsedS > MaxSeconds {
		return fmt.Errorf("elapsed_s %v: not the length of a run (0 to %d seconds)", r.ElapsedS, MaxSeconds)
	}
	for i, p := range r.Series {
		if p.Second < 1 || p.Second > MaxSeconds {
			return fmt.Errorf("series[%d].second %d: not a second of a run (1 to %d)", i, p.Second, MaxSeconds)
		}
		for _, v := range []float64{p.RPS, p.P50MS, p.P95MS, p.P99MS, p.CPU} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return fmt.Errorf("series[%d]: %v is not a figure of a second", i, v)
			}
		}
	}
	for _, m := range r.Monitors {
		if len(m.Values) > MaxSeconds {
			return fmt.Errorf("monitor %s %s: %d values, more than a run has seconds", m.Monitor, m.Series, len(m.Values))
		}
	}
	return nil
}

// monitorChart is the series of one monitor in one unit, drawn on one chart.
type monitorChart struct {
	Title  string       `json:"title"`
	Unit   string       `json:"unit"`
	Labels []string     `json:"labels"`
	Values [][]*float64 `json:"values"`
}

// monitorCharts groups the monitors' series by monitor and unit, in the script's order; a series
// without a value (not found, or its scrapes failed, as the page says) draws nothing.
func monitorCharts(ms []*monitor.Series) []monitorChart {
	out := []monitorChart{}
	at := map[[2]string]int{}
	for _, m := range ms {
		if !slices.ContainsFunc(m.Values, func(v *float64) bool { return v != nil }) {
			continue
		}
		key := [2]string{m.Monitor, m.Unit}
		i, ok := at[key]
		if !ok {
			i = len(out)
			at[key] = i
			out = append(out, monitorChart{Title: m.Monitor + " (" + m.Unit + ")", Unit: m.Unit})
		}
		out[i].Labels = append(out[i].Labels, m.Series)
		out[i].Values = append(out[i].Values, m.Values)
	}
	return out
}

func errorClassSet(ps []summary.Point) map[string]bool {
	set := map[string]bool{}
	for _, p := range ps {
		for c, n := range p.ErrorsByClass {
			if n > 0 {
				set[c] = true
			}
		}
	}
	return set
}

// errorClasses are the classes of errs with a count, in name order.
func errorClasses(errs map[string]int64) []string {
	var out []string
	for _, c := range slices.Sorted(maps.Keys(errs)) {
		if errs[c] > 0 {
			out = append(out, c)
		}
	}
	return out
}

// change is a comparison's change, relative or in points for the error rate, with its noise.
func change(ch summary.Change) string {
	if ch.Metric == "error_rate" {
		return fmt.Sprintf("%+.2f pt (noise ±%.2f)", ch.Change*100, ch.Noise*100)
	}
	return fmt.Sprintf("%+.1f%% (noise ±%.1f%%)", ch.Change*100, ch.Noise*100)
}

// SweepReport is what a sweep's page tells: its levels, charts of throughput and latency
// against concurrency with the USL fit's curve, the fit and the knee.
type SweepReport struct {
	Title     string
	Sweep     *sweep.Result
	Version   string
	Generated time.Time
}

// Write writes r's page to w.
func (r SweepReport) Write(w io.Writer) error {
	s := r.Sweep
	if s == nil || len(s.Levels) == 0 {
		return fmt.Errorf("report: no sweep levels to report on")
	}
	// The levels that ran their whole step are drawn, with their successful throughput: what
	// the fit and the knee are told on.
	var levels, rps, p50, p95, p99 []float64
	for _, l := range s.Levels {
		if l.Stopped == "" {
			levels, rps, p50, p95, p99 = append(levels, float64(l.VUs)), append(rps, l.OKRPS), append(p50, l.P50MS),
				append(p95, l.P95MS), append(p99, l.P99MS)
		}
	}
	if len(levels) == 0 {
		return fmt.Errorf("report: no sweep level ran its whole step")
	}
	data := map[string]any{"levels": levels, "rps": rps, "p50": p50, "p95": p95, "p99": p99}
	// The fit's curve is drawn through 48 points spread evenly on the log scale between the
	// lowest and highest level, as well as through the levels.
	lo, hi := slices.Min(levels), slices.Max(levels)
	xs := slices.Clone(levels)
	for i := range 48 {
		xs = append(xs, math.Round(lo*math.Pow(hi/lo, float64(i)/47)*100)/100)
	}
	slices.Sort(xs)
	xs = slices.Compact(xs)
	data["x"] = xs
	if s.Fit != nil {
		fit := make([]float64, len(xs))
		for i, x := range xs {
			fit[i] = s.Fit.X(x)
		}
		data["fit"] = fit
	}
	if s.KneeVUs != 0 {
		data["knee"] = s.KneeVUs
	}
	return execute(w, "sweep.html.tmpl", r.Title, data, map[string]any{"S": s, "Version": r.Version, "Generated": r.Generated,
		"SweepJS": template.JS(sweepJS)})
}
