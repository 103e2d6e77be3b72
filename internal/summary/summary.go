// Package summary holds the figures a run's results are told in, whoever ran it, and the one way
// they are printed: `barrage run` with its --out document and its live line, the server
// summarizing the merged seconds of a run's agents, and `barrage runs --watch` printing what the
// server summarized. One label's figures come from one histogram, the same way everywhere.
package summary

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/quantity"
	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/internal/threshold"
)

// Label is one request's, group's or hook's figures.
type Label struct {
	Name      string  `json:"name"`
	Count     int64   `json:"count"`
	RPS       float64 `json:"rps"`
	ErrorRate float64 `json:"error_rate"`
	BytesIn   int64   `json:"bytes_in"`
	BytesOut  int64   `json:"bytes_out"`
	MinMS     float64 `json:"min_ms"`
	MeanMS    float64 `json:"mean_ms"`
	P50MS     float64 `json:"p50_ms"`
	P90MS     float64 `json:"p90_ms"`
	P95MS     float64 `json:"p95_ms"`
	P99MS     float64 `json:"p99_ms"`
	MaxMS     float64 `json:"max_ms"`
	// Histogram is the latency histogram in its binary encoding (base64 in JSON): merge it with
	// other runs' exactly.
	Histogram []byte `json:"histogram"`
}

// NewLabel is name's figures from st over elapsed.
func NewLabel(name string, st *metrics.Stats, elapsed time.Duration) Label {
	h := st.Latency
	enc, _ := h.MarshalBinary()
	var rate float64
	if st.Requests > 0 {
		rate = float64(st.Failed()) / float64(st.Requests)
	}
	return Label{
		Name: name, Count: st.Requests, RPS: float64(st.Requests) / elapsed.Seconds(), ErrorRate: rate,
		BytesIn: st.BytesIn, BytesOut: st.BytesOut,
		MinMS: Millis(h.Min()), MeanMS: Millis(h.Mean()), P50MS: Millis(h.Quantile(0.5)), P90MS: Millis(h.Quantile(0.9)),
		P95MS: Millis(h.Quantile(0.95)), P99MS: Millis(h.Quantile(0.99)), MaxMS: Millis(h.Max()), Histogram: enc,
	}
}

// Scenario is a scenario of a script: its name, tags, model and requests, and the iterations it
// completed (absent from a server's summary, whose agents count them all together).
type Scenario struct {
	Name       string            `json:"name"`
	Tags       map[string]string `json:"tags,omitempty"`
	Model      string            `json:"model"`
	Requests   []string          `json:"requests"`
	Iterations *int64            `json:"iterations,omitempty"`
}

// Scenarios are the scenarios of a local run.
func Scenarios(rs []run.ScenarioResult) []Scenario {
	var out []Scenario
	for _, r := range rs {
		out = append(out, Scenario{Name: r.Name, Tags: r.Tags, Model: r.Model.String(), Requests: r.Requests, Iterations: &r.Iterations})
	}
	return out
}

// ScriptScenarios are the scenarios s declares, without what a run of them did.
func ScriptScenarios(s *script.Script) []Scenario {
	var out []Scenario
	for _, sc := range s.Scenarios {
		out = append(out, Scenario{Name: sc.Name, Tags: sc.Tags, Model: sc.Load.Model.String(), Requests: sc.Session.RequestLabels()})
	}
	return out
}

// String is the scenario as a summary prints it.
func (s Scenario) String() string {
	line := "scenario " + s.Name
	if len(s.Tags) > 0 {
		var tags []string
		for _, k := range slices.Sorted(maps.Keys(s.Tags)) {
			tags = append(tags, k+"="+s.Tags[k])
		}
		line += " (" + strings.Join(tags, ", ") + ")"
	}
	line += ": " + s.Model + " model"
	if s.Iterations != nil {
		line += fmt.Sprintf(", %d iterations", *s.Iterations)
	}
	return line + "; " + strings.Join(s.Requests, ", ")
}

// Threshold is a threshold's verdict. Check is the check as written; Over, Request and Abort
// are the settings of its mapping form.
type Threshold struct {
	Check   string `json:"check"`
	Over    string `json:"over,omitempty"`
	Request string `json:"request,omitempty"`
	Abort   bool   `json:"abort,omitempty"`
	// Observed is over the whole run, or when Worst its worst full window.
	Observed float64 `json:"observed"`
	Worst    bool    `json:"worst_window,omitempty"`
	Passed   bool    `json:"passed"`
}

// Thresholds are the verdicts of rs.
func Thresholds(rs []threshold.Result) []Threshold {
	out := make([]Threshold, len(rs))
	for i, r := range rs {
		t := r.Threshold
		out[i] = Threshold{Check: t.Source, Request: t.Request, Abort: t.Abort, Observed: r.Observed, Worst: r.Worst, Passed: r.Passed}
		if t.Window > 0 && !strings.Contains(t.Source, " over ") {
			out[i].Over = t.Window.String()
		}
	}
	return out
}

// threshold is t as the script said it, or nil when its check no longer parses.
func (t Threshold) threshold() *script.Threshold {
	th, err := script.ParseThreshold(t.Check)
	if err != nil {
		return nil
	}
	th.Request, th.Abort = t.Request, t.Abort
	if d, err := quantity.ParseDuration(t.Over); err == nil {
		th.Window = d
	}
	return th
}

// String is the threshold's verdict as `barrage run` prints it, the observed figure in the
// threshold's unit.
func (t Threshold) String() string {
	if th := t.threshold(); th != nil {
		return threshold.Result{Threshold: th, Observed: t.Observed, Worst: t.Worst, Passed: t.Passed}.String()
	}
	return fmt.Sprintf("%s: %g, passed %t", t.Check, t.Observed, t.Passed)
}

// ObservedText is the observed figure in the threshold's unit.
func (t Threshold) ObservedText() string {
	if th := t.threshold(); th != nil {
		return threshold.Result{Threshold: th, Observed: t.Observed}.ObservedText()
	}
	return strconv.FormatFloat(t.Observed, 'g', -1, 64)
}

// Verdict says what limited the load: a generator (and then the numbers measure the tool) or
// the target (which could not take the load asked for: the numbers measure it); and what the
// generator delivered of the load.
type Verdict struct {
	GeneratorLimited bool      `json:"generator_limited"`
	Reasons          []string  `json:"reasons,omitempty"`
	TargetLimited    bool      `json:"target_limited,omitempty"`
	TargetReasons    []string  `json:"target_reasons,omitempty"`
	Delivery         *Delivery `json:"delivery,omitempty"`
}

// Delivery is whether a generator delivered the load asked for: in the open model, the arrivals
// it started of those due and how late it started them (its own lateness, apart from the
// target's latency); in the closed model, how its VUs' time split between waiting on the target
// and its own work.
type Delivery struct {
	Model string `json:"model"`
	// Scheduled counts the open model's arrivals due (the closed model's think times ending),
	// Late those more than 10 ms late, Dropped the arrivals that found no free VU.
	Scheduled int64 `json:"scheduled"`
	Late      int64 `json:"late"`
	Dropped   int64 `json:"dropped"`
	// LatenessMeanMS and LatenessMaxMS are how late the scheduled starts were.
	LatenessMeanMS float64 `json:"lateness_mean_ms"`
	LatenessMaxMS  float64 `json:"lateness_max_ms"`
	// TargetShare is the share of the VUs' time in iterations (think times left out) spent
	// waiting on the target; the rest was the generator's. Absent when not measured.
	TargetShare *float64 `json:"target_share,omitempty"`
	// Note says what the delivery was judged on when that is not the whole run.
	Note string `json:"note,omitempty"`
}

// VerdictOf is the engine's verdict on a generator of a run of model as results tell it.
func VerdictOf(v run.Verdict, model script.Model) Verdict {
	return Verdict{GeneratorLimited: v.GeneratorLimited, Reasons: v.Reasons, TargetLimited: v.TargetLimited,
		TargetReasons: v.TargetReasons, Delivery: DeliveryOf(v.Delivery, model)}
}

// DeliveryOf is d, of a run of model, as results tell it.
func DeliveryOf(d run.Delivery, model script.Model) *Delivery {
	out := &Delivery{Model: model.String(), Scheduled: d.Scheduled, Late: d.Late, Dropped: d.Dropped,
		LatenessMeanMS: Millis(d.LatenessMean), LatenessMaxMS: Millis(d.LatenessMax)}
	if d.BusyTime > 0 {
		share := d.TargetShare()
		out.TargetShare = &share
	}
	return out
}

// String is what the generator delivered in a sentence.
func (d *Delivery) String() string {
	var parts []string
	if d.Model == script.Open.String() && d.Scheduled > 0 {
		started := d.Scheduled - d.Dropped
		parts = append(parts, fmt.Sprintf("started %d of %d arrivals due (%.1f%%), %s late on average (worst %s)",
			started, d.Scheduled, float64(started)*100/float64(d.Scheduled), MillisText(d.LatenessMeanMS), MillisText(d.LatenessMaxMS)))
	}
	if d.TargetShare != nil {
		parts = append(parts, fmt.Sprintf("VUs spent %.0f%% of their time waiting on the target, %.0f%% in the generator",
			*d.TargetShare*100, (1-*d.TargetShare)*100))
	}
	if len(parts) == 0 {
		return ""
	}
	out := "delivered: " + strings.Join(parts, "; ")
	if d.Note != "" {
		out += " (" + d.Note + ")"
	}
	return out
}

// String is the verdict as people read it, one sentence, then one reason a line, then what
// the generator delivered.
func (v Verdict) String() string {
	var s string
	switch {
	case v.GeneratorLimited:
		s = "generator was the bottleneck; these numbers measure the tool and understate the target's capacity:\n  - " +
			strings.Join(v.Reasons, "\n  - ")
	case v.TargetLimited:
		s = "the target was the limit: it could not take the load asked for; these numbers measure the target:\n  - " +
			strings.Join(v.TargetReasons, "\n  - ")
	default:
		s = "generator OK: the numbers measure the target"
	}
	if d := v.Delivery; d != nil && d.String() != "" {
		s += "\n" + d.String()
	}
	return s
}

// Check is the tally of one assertion of the script over a run: the responses it judged, and of
// them those that passed and those that failed it.
type Check struct {
	script.Check
	Passes int64 `json:"passes"`
	Fails  int64 `json:"fails"`
}

// String is the check's line in a printed summary: a mark, its request and name, the share of
// passes, and the counts.
func (c Check) String() string {
	mark, n := "✓", c.Passes+c.Fails
	if c.Fails > 0 {
		mark = "✗"
	}
	line := fmt.Sprintf("%s %s: %s  %s (%d of %d)", mark, c.Request, c.Name, c.Percent(), c.Passes, n)
	if c.Fails > 0 {
		line += fmt.Sprintf(", %d failed", c.Fails)
	}
	return line
}

// Percent is the share of the responses judged that passed, as a percentage with two decimals.
func (c Check) Percent() string { return percent(c.Passes, c.Passes+c.Fails) }

// percent is part of whole as a percentage with two decimals, never rounded up to 100% while a
// part is missing.
func percent(part, whole int64) string {
	if whole == 0 {
		return "-"
	}
	p := float64(part) * 100 / float64(whole)
	if part < whole {
		p = math.Floor(p*100) / 100
	}
	return strconv.FormatFloat(p, 'f', 2, 64) + "%"
}

// Checks tallies checks over total: each check the run judged a response by, in the script's
// order (one that judged none is left out).
func Checks(total *metrics.Snapshot, checks []script.Check) []Check {
	var out []Check
	for _, c := range checks {
		if st, ok := total.Labels[metrics.CheckKey(c.Label())]; ok && st.Requests > 0 {
			failed := st.Errors[metrics.ErrAssertion]
			out = append(out, Check{Check: c, Passes: st.Requests - failed, Fails: failed})
		}
	}
	return out
}

// Summary is a run's account: the figures of all its requests together, of each request, group
// and url plugin's hooks, its errors by class, its checks, its thresholds and the verdict on its
// generators.
type Summary struct {
	Total    Label   `json:"total"`
	Requests []Label `json:"requests"`
	Groups   []Label `json:"groups"`
	Hooks    []Label `json:"hooks,omitempty"`
	// Steps are WebSocket sessions and their receives' round trips, by name.
	Steps []Label `json:"steps,omitempty"`
	// Schedule, in the open model, is the latency from the schedule: from when each iteration
	// was due to its first request's end. Its gap to the first request's response time is the
	// generators' own lateness.
	Schedule *Label `json:"schedule,omitempty"`
	// HookErrors counts failed hook calls by reason.
	HookErrors map[string]int64 `json:"hook_errors,omitempty"`
	// ErrorSamples are the first distinct reasons of each request's failures, by class.
	ErrorSamples []metrics.ErrorSample `json:"error_samples,omitempty"`
	// Checks tally the script's assertions: each with the responses that passed and failed it.
	Checks []Check `json:"checks,omitempty"`
	// Scenarios are the scenarios of a script that has them.
	Scenarios  []Scenario       `json:"scenarios,omitempty"`
	Errors     map[string]int64 `json:"errors"`
	Thresholds []Threshold      `json:"thresholds"`
	// Stability is how steady the throughput was over the steady state; nil when the run had
	// too little of one to tell. When an agent's figures stop short (Incomplete), it covers the
	// seconds before, and SurvivorStability the seconds after, of the agents that went on.
	Stability         *Stability `json:"stability,omitempty"`
	SurvivorStability *Stability `json:"survivor_stability,omitempty"`
	Verdict           Verdict    `json:"verdict"`
	// Incomplete, of a run on agents, says which agents' figures stop short and what is
	// missing; nil when every agent's figures are whole.
	Incomplete *Incomplete `json:"incomplete,omitempty"`
	// Insights are the run's findings, the gravest first: what to look at, with its evidence.
	Insights []Insight `json:"insights,omitempty"`
}

// New summarizes total, which covers elapsed: requests, groups and checks are the script's, in
// session order (one absent from total did not run and is left out); hooks are whichever total
// has.
func New(total *metrics.Snapshot, requests, groups []string, checks []script.Check, elapsed time.Duration) Summary {
	all := total.Requests()
	s := Summary{Total: NewLabel("all requests", all, elapsed), Errors: Errors(all),
		Requests: []Label{}, Groups: []Label{}, Thresholds: []Threshold{}, Checks: Checks(total, checks)}
	for _, name := range requests {
		if st, ok := total.Labels[metrics.RequestKey(name)]; ok {
			s.Requests = append(s.Requests, NewLabel(name, st, elapsed))
		}
	}
	for _, name := range groups {
		if st, ok := total.Labels[metrics.GroupKey(name)]; ok {
			s.Groups = append(s.Groups, NewLabel(name, st, elapsed))
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(total.Labels), metrics.Key.Compare) {
		switch k.Kind {
		case metrics.Hook:
			s.Hooks = append(s.Hooks, NewLabel(k.Name, total.Labels[k], elapsed))
		case metrics.Step:
			s.Steps = append(s.Steps, NewLabel(k.Name, total.Labels[k], elapsed))
		}
	}
	if st, ok := total.Labels[metrics.ScheduleKey]; ok {
		l := NewLabel(metrics.ScheduleKey.Name, st, elapsed)
		s.Schedule = &l
	}
	return s
}

// Errors is st's errors by class, every class named.
func Errors(st *metrics.Stats) map[string]int64 {
	out := map[string]int64{}
	for c := metrics.ErrorClass(1); c < metrics.NumErrorClasses; c++ {
		out[c.String()] = st.Errors[c]
	}
	return out
}

// Findings are the insights shown beside the incomplete figures, which say a lost agent's.
func (s *Summary) Findings() []Insight {
	var out []Insight
	for _, in := range s.Insights {
		if in.Kind != InsightLostAgent {
			out = append(out, in)
		}
	}
	return out
}

// Print writes s as `barrage run` and `barrage runs --watch` print it: a table of the labels,
// the errors by class, the plugins' failures, the thresholds and the verdict.
func (s *Summary) Print(w io.Writer) {
	if s.Incomplete != nil {
		fmt.Fprintln(w, s.Incomplete)
		fmt.Fprintln(w)
	}
	if found := s.Findings(); len(found) > 0 {
		fmt.Fprintln(w, "LOOK AT:")
		for _, in := range found {
			fmt.Fprintf(w, "  - %s\n    %s\n", in.Title, in.Evidence)
		}
		fmt.Fprintln(w)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tcount\trate/s\terrors\tmin\tmean\tp50\tp90\tp95\tp99\tmax\t")
	row := func(name string, l Label) {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.2f%%\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, l.Count, l.RPS, l.ErrorRate*100,
			MillisText(l.MinMS), MillisText(l.MeanMS), MillisText(l.P50MS), MillisText(l.P90MS), MillisText(l.P95MS), MillisText(l.P99MS), MillisText(l.MaxMS))
	}
	for _, l := range s.Requests {
		row(l.Name, l)
	}
	row(s.Total.Name, s.Total)
	if s.Schedule != nil {
		row("from schedule", *s.Schedule)
	}
	for _, l := range s.Groups {
		row("group "+l.Name, l)
	}
	// Time in url plugins' hooks is not in the requests' times: it is shown beside them, one
	// row per plugin (a call is a before or an after).
	for _, l := range s.Steps {
		row("step "+l.Name, l)
	}
	for _, l := range s.Hooks {
		row("hook "+l.Name+" (calls)", l)
	}
	tw.Flush()
	var errs []string
	for c := metrics.ErrorClass(1); c < metrics.NumErrorClasses; c++ {
		if n := s.Errors[c.String()]; n > 0 {
			errs = append(errs, fmt.Sprintf("%s %d", c, n))
		}
	}
	if len(errs) > 0 {
		fmt.Fprintln(w, "errors:", strings.Join(errs, ", "))
	}
	for _, sc := range s.Scenarios {
		fmt.Fprintln(w, sc)
	}
	if len(s.Checks) > 0 {
		held := 0
		for _, c := range s.Checks {
			if c.Fails == 0 {
				held++
			}
		}
		fmt.Fprintf(w, "checks: %d of %d held on every response\n", held, len(s.Checks))
		for _, c := range s.Checks {
			fmt.Fprintln(w, " ", c)
		}
	}
	for _, e := range s.ErrorSamples {
		fmt.Fprintf(w, "  %s, %s: %d × %s\n", e.Label, e.Class, e.Count, e.Message)
	}
	for _, reason := range slices.Sorted(maps.Keys(s.HookErrors)) {
		fmt.Fprintf(w, "plugin failures: %d × %s\n", s.HookErrors[reason], reason)
	}
	if len(s.Thresholds) > 0 {
		fmt.Fprintln(w, "\nthresholds:")
		if s.Incomplete != nil {
			fmt.Fprintln(w, "  (judged on incomplete figures: see INCOMPLETE above)")
		}
		for _, t := range s.Thresholds {
			fmt.Fprintln(w, " ", t)
		}
	}
	fmt.Fprintln(w)
	for _, st := range []*Stability{s.Stability, s.SurvivorStability} {
		if st == nil {
			continue
		}
		fmt.Fprintln(w, st)
		for _, c := range st.Causes {
			fmt.Fprintln(w, "  - "+c)
		}
	}
	fmt.Fprintln(w, s.Verdict.String())
}

// Failed reports whether a threshold failed.
func (s *Summary) Failed() bool {
	return slices.ContainsFunc(s.Thresholds, func(t Threshold) bool { return !t.Passed })
}

// Live is one second of a run as its live line tells it.
type Live struct {
	Elapsed          time.Duration // from the run's start to the second's end
	VUs              int64
	RPS              float64
	Requests, Failed int64
	P50, P95, P99    time.Duration
	CPU              float64 // the busiest generator's share of its machine, 0 to 1
	Agents           int     // generators, when the run is on agents
	// Stability is over the latest seconds of the steady state (LiveStability); nil outside it.
	Stability *Stability
}

// NewLive is the live figures of a second whose requests' stats are st (Snapshot.Requests),
// which lasted interval and ended elapsed into the run.
func NewLive(st *metrics.Stats, interval, elapsed time.Duration, vus int64, cpu float64) Live {
	return Live{Elapsed: elapsed, VUs: vus, CPU: cpu, Requests: st.Requests, Failed: st.Failed(),
		RPS: float64(st.Requests) / max(interval.Seconds(), 1e-9),
		P50: st.Latency.Quantile(0.5), P95: st.Latency.Quantile(0.95), P99: st.Latency.Quantile(0.99)}
}

// String is the line printed for each second of a run, local or on the server.
func (l Live) String() string {
	var errPct float64
	if l.Requests > 0 {
		errPct = float64(l.Failed) * 100 / float64(l.Requests)
	}
	line := fmt.Sprintf("%6s  vus %4d  %8.0f req/s  p50 %-8s p95 %-8s p99 %-8s errors %5.2f%%  cpu %3.0f%%",
		l.Elapsed.Round(time.Second), l.VUs, l.RPS, Duration(l.P50), Duration(l.P95), Duration(l.P99), errPct, l.CPU*100)
	if l.Agents > 0 {
		line += fmt.Sprintf("  agents %d", l.Agents)
	}
	if st := l.Stability; st != nil {
		line += fmt.Sprintf("  cv %.0f%%", st.CV*100)
		if st.Unstable {
			line += " UNSTABLE"
		}
	}
	return line
}

// Duration writes d as the summaries do: seconds, milliseconds or microseconds, as fits.
func Duration(d time.Duration) string { return metrics.FormatDuration(d) }

// Millis is d in milliseconds, as the JSON documents give times.
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// FromMillis is the duration of ms milliseconds.
func FromMillis(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// MillisText is ms milliseconds as the summaries write durations (Duration).
func MillisText(ms float64) string { return Duration(FromMillis(ms)) }
