package summary

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/monitor"
	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/script"
)

// Result is a local run's account, `barrage run --out`'s document: the run's course (its script,
// model, iterations, why it stopped) and its Summary.
type Result struct {
	Script     string    `json:"script"`
	Model      string    `json:"model"`
	Start      time.Time `json:"start"`
	ElapsedS   float64   `json:"elapsed_s"`
	Iterations int64     `json:"iterations"`
	Dropped    int64     `json:"dropped"`
	// Interrupted counts iterations cut short at the end of the graceful stop.
	Interrupted int64    `json:"interrupted"`
	Unsent      int64    `json:"unsent"`
	Stop        run.Stop `json:"stop"`
	Exhausted   string   `json:"exhausted,omitempty"`
	Summary
	// Series is the run's seconds, all requests together.
	Series []Point `json:"series"`
	// RequestSeries are each request's own seconds, by name, when the result was read from a
	// run on the server: a comparison judges each request on its own noise. Not written out.
	RequestSeries map[string][]Point `json:"-"`
	// Monitors are the target's own metrics the script's monitors kept, second by second on
	// the same axis as Series; MonitorFailures the monitors whose scrapes failed.
	Monitors        []*monitor.Series `json:"monitors,omitempty"`
	MonitorFailures []monitor.Failure `json:"monitor_failures,omitempty"`
}

// Point is one second of a run, all its requests together, and its generators' health.
type Point struct {
	Second   int64   `json:"second"` // from 1, as the series CSV counts
	Requests int64   `json:"requests"`
	RPS      float64 `json:"rps"`
	Errors   int64   `json:"errors"`
	// ErrorsByClass counts the second's failed requests by class; classes with none are left out.
	ErrorsByClass map[string]int64 `json:"errors_by_class,omitempty"`
	P50MS         float64          `json:"p50_ms"`
	P95MS         float64          `json:"p95_ms"`
	P99MS         float64          `json:"p99_ms"`
	VUs           int64            `json:"vus"`
	// CPU is the busiest generator's share of its machine in the second, 0 to 1.
	CPU float64 `json:"cpu"`
	// Dropped counts open-model iterations that found no free VU; LatenessMaxMS is how late
	// the latest scheduled start was, across generators.
	Dropped       int64   `json:"dropped,omitempty"`
	LatenessMaxMS float64 `json:"lateness_max_ms,omitempty"`
}

// NewPoint is the second of index (0 for the first) whose metrics are second, measured by
// generators whose health in it was healths (one for a local run, one per agent on the
// server). A last second cut short has its rate over the part it lasted.
func NewPoint(index int64, second *metrics.Snapshot, healths ...run.Health) Point {
	st := second.Requests()
	h := st.Latency
	p := Point{Second: index + 1, Requests: st.Requests, RPS: float64(st.Requests) / max(second.Duration.Seconds(), 1e-9),
		Errors: st.Failed(), P50MS: Millis(h.Quantile(0.5)), P95MS: Millis(h.Quantile(0.95)), P99MS: Millis(h.Quantile(0.99))}
	for c, n := range Errors(st) {
		if n > 0 {
			if p.ErrorsByClass == nil {
				p.ErrorsByClass = map[string]int64{}
			}
			p.ErrorsByClass[c] = n
		}
	}
	var late time.Duration
	for _, g := range healths {
		p.VUs += g.ActiveVUs
		p.Dropped += g.Dropped
		p.CPU = max(p.CPU, g.CPU)
		late = max(late, g.LatenessMax)
	}
	p.LatenessMaxMS = Millis(late)
	return p
}

// SetStability tells r's stability from its series over the steady state of w, and what its
// monitors say of it (so set Monitors first).
func (r *Result) SetStability(w script.Workload) {
	rps := make([]float64, 0, len(r.Series))
	for _, p := range r.Series {
		for int64(len(rps)) < p.Second-1 {
			rps = append(rps, 0) // a second without a point had no request
		}
		rps = append(rps, p.RPS)
	}
	from, to := SteadyWindow(w, time.Duration(r.ElapsedS*float64(time.Second)))
	r.Stability = NewStability(rps, from, to)
	r.Stability.Explain(rps, r.Monitors)
}

// NewResult is res's account.
func NewResult(res *run.Result) *Result {
	r := &Result{
		Script: res.Script, Model: res.Model.String(), Start: res.Start, ElapsedS: res.Elapsed.Seconds(),
		Iterations: res.Iterations, Dropped: res.Dropped, Interrupted: res.Interrupted, Unsent: res.Unsent,
		Stop: res.Stop, Exhausted: res.Exhausted,
		Summary: New(res.Total, res.Requests, res.Groups, res.Checks, res.Elapsed), Series: []Point{},
	}
	r.HookErrors, r.ErrorSamples = res.HookErrors, res.ErrorSamples
	r.Scenarios = Scenarios(res.Scenarios)
	r.Thresholds = Thresholds(res.Thresholds)
	r.Verdict = VerdictOf(res.Verdict, res.Model)
	return r
}

// Print writes the run's course in a line or three, then its Summary.
func (r *Result) Print(w io.Writer) {
	elapsed := time.Duration(r.ElapsedS * float64(time.Second))
	model := r.Model + " model"
	if len(r.Scenarios) > 0 {
		model = fmt.Sprintf("%d scenarios", len(r.Scenarios))
	}
	fmt.Fprintf(w, "\n%s: %s, %s, %d iterations", r.Script, model, elapsed.Round(time.Millisecond), r.Iterations)
	if r.Dropped > 0 {
		fmt.Fprintf(w, ", %d dropped", r.Dropped)
	}
	if r.Interrupted > 0 {
		fmt.Fprintf(w, ", %d interrupted", r.Interrupted)
	}
	if r.Unsent > 0 {
		fmt.Fprintf(w, ", %d requests not sent (a variable they use was not set)", r.Unsent)
	}
	fmt.Fprintln(w)
	if r.Stop.Reason != run.Completed {
		fmt.Fprintf(w, "stopped early: %s\n", r.Stop.Detail)
	}
	if r.Exhausted != "" {
		fmt.Fprintf(w, "ended early: %s\n", r.Exhausted)
	}
	r.Summary.Print(w)
	r.printMonitors(w)
}

// printMonitors writes each monitor series' mean and range over the run, and the monitors
// whose scrapes failed.
func (r *Result) printMonitors(w io.Writer) {
	if len(r.Monitors) == 0 && len(r.MonitorFailures) == 0 {
		return
	}
	fmt.Fprintln(w, "\ntarget metrics (monitors):")
	for _, m := range r.Monitors {
		var n int
		var sum, lo, hi float64
		for _, v := range m.Values {
			if v == nil {
				continue
			}
			if n == 0 || *v < lo {
				lo = *v
			}
			if n == 0 || *v > hi {
				hi = *v
			}
			n, sum = n+1, sum+*v
		}
		if n == 0 {
			why := "the series was not found"
			if slices.ContainsFunc(r.MonitorFailures, func(f monitor.Failure) bool { return f.Monitor == m.Monitor }) {
				why = "its monitor's scrapes failed, below"
			}
			fmt.Fprintf(w, "  %s %s: no value (%s)\n", m.Monitor, m.Series, why)
			continue
		}
		fmt.Fprintf(w, "  %s %s: mean %.4g, min %.4g, max %.4g (%s, %d seconds)\n", m.Monitor, m.Series, sum/float64(n), lo, hi, m.Unit, n)
	}
	for _, f := range r.MonitorFailures {
		fmt.Fprintf(w, "  %s: %d scrapes failed; the last: %s\n", f.Monitor, f.Failed, f.LastError)
	}
}
