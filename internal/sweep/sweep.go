// Package sweep runs a script at one concurrency after another and finds where the target
// stops scaling: each level's throughput, latencies, errors and generator verdict, a Universal
// Scalability Law fit over the levels, and the knee, the level past which throughput stops
// growing while latency climbs.
package sweep

import (
	"cmp"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/barrage-load/barrage/internal/engine"
	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/internal/summary"
	"github.com/barrage-load/barrage/internal/usl"
)

// Level is one step of a sweep: the script run by VUs virtual users in the closed model.
type Level struct {
	VUs int `json:"vus"`
	// Seconds are the seconds measured: the step without its first second (in which
	// connections open and VUs start), or the whole of a step of two seconds or less.
	Seconds  float64 `json:"seconds"`
	Requests int64   `json:"requests"`
	RPS      float64 `json:"rps"`
	// OKRPS counts only the requests that succeeded: the throughput the fit and the knee are
	// told on (a target that fails fast is not fast).
	OKRPS     float64 `json:"ok_rps"`
	P50MS     float64 `json:"p50_ms"`
	P95MS     float64 `json:"p95_ms"`
	P99MS     float64 `json:"p99_ms"`
	ErrorRate float64 `json:"error_rate"`
	// Reliability is the share of requests that succeeded, 1 − ErrorRate.
	Reliability float64         `json:"reliability"`
	Verdict     summary.Verdict `json:"verdict"`
	// LateStart is set when the step's VUs were not all running by the end of its first second:
	// the generator started them late, and the level's load was less than asked.
	LateStart bool `json:"late_start"`
	// Stopped says why the step ended before its time, when it did; such a level is shown but
	// left out of the fit and the knee.
	Stopped string `json:"stopped,omitempty"`
}

// Complete counts the levels that ran their whole step.
func (r *Result) Complete() int {
	n := 0
	for _, l := range r.Levels {
		if l.complete() {
			n++
		}
	}
	return n
}

// complete reports whether the level ran its whole step.
func (l Level) complete() bool { return l.Stopped == "" }

// Result is a sweep's account: its levels, the USL fitted to them and the knee.
type Result struct {
	Script string  `json:"script"`
	StepS  float64 `json:"step_s"`
	Levels []Level `json:"levels"`
	// Fit is the USL fitted to the levels' throughput; nil when it could not be (FitError
	// says why: too few levels, no throughput).
	Fit      *usl.Fit `json:"fit,omitempty"`
	FitError string   `json:"fit_error,omitempty"`
	// PeakVUs and PeakRPS are the fit's predicted peak; absent when the fit predicts none (no
	// crosstalk: throughput grows towards an asymptote, or forever).
	PeakVUs *float64 `json:"peak_vus,omitempty"`
	PeakRPS *float64 `json:"peak_rps,omitempty"`
	// KneeVUs is the level past which throughput stops growing while p95 climbs; 0 when the
	// sweep found none (see usl.Knee for the rule).
	KneeVUs int `json:"knee_vus,omitempty"`
}

// Options are a sweep's: the concurrencies, each step's length and the engine's options for
// each step (their load is replaced by each level's).
type Options struct {
	VUs  []int
	Step time.Duration
	// Engine are the engine's options for every level; its OnSecond, when set, receives every
	// level's seconds numbered on the sweep's schedule (from Start), one level after another.
	Engine engine.Options
	// Start is when the first level starts (zero: at once); each next one starts on the next
	// whole second of that schedule after the level before it ended.
	Start time.Time
	// OnLevel, when set, receives each level as it ends.
	OnLevel func(Level)
}

// Run sweeps s at each of o.VUs in turn, for o.Step each, in the closed model (every VU of a
// level started at once, the script's think times kept, its own load replaced), then fits and judges the levels. A
// canceled context ends the sweep with the levels run so far.
func Run(ctx context.Context, s *script.Script, o Options) (*Result, error) {
	if len(o.VUs) == 0 {
		return nil, errors.New("a sweep needs at least one level")
	}
	res := &Result{Script: s.Name, StepS: o.Step.Seconds(), Levels: []Level{}}
	start := o.Start
	if start.IsZero() {
		start = time.Now()
	}
	var offset int64 // the schedule's second the level starts on
	for _, n := range o.VUs {
		if ctx.Err() != nil {
			break
		}
		lv, err := runLevel(ctx, s, n, o, start.Add(time.Duration(offset)*time.Second), offset)
		offset = max(offset+1, int64(math.Ceil(time.Since(start).Seconds())))
		if err != nil {
			return res, fmt.Errorf("level %d VUs: %w", n, err)
		}
		res.Levels = append(res.Levels, lv)
		if o.OnLevel != nil {
			o.OnLevel(lv)
		}
	}
	res.judge()
	return res, nil
}

// runLevel runs the level of n VUs from levelStart, the second offset of the sweep's schedule.
func runLevel(ctx context.Context, s *script.Script, n int, o Options, levelStart time.Time, offset int64) (Level, error) {
	level := *s
	level.Load.Model, level.Load.VUs, level.Load.Duration, level.Load.Iterations = script.Closed, n, o.Step, 0
	level.Load.Stages, level.Load.MaxVUs, level.Load.RampUp = nil, 0, 0
	level.Thresholds = nil // a step is measured, not judged
	opts := o.Engine
	opts.VUs, opts.Duration, opts.Rate, opts.Stages, opts.Sweep = 0, 0, 0, nil, nil
	opts.Start = levelStart
	skip := int64(0)
	if o.Step > 2*time.Second {
		skip = 1
	}
	measured := &metrics.Snapshot{}
	var lv Level
	opts.OnSecond = func(sec engine.Second) {
		if sec.Index == 0 && sec.Health.ActiveVUs < int64(n) {
			lv.LateStart = true
		}
		if sec.Index >= skip {
			measured.Merge(sec.Snapshot)
		}
		if o.Engine.OnSecond != nil {
			sec.Index += offset
			o.Engine.OnSecond(sec)
		}
	}
	r, err := engine.Run(ctx, &level, opts)
	if r == nil {
		return Level{}, err
	}
	st := measured.Requests()
	secs := max(measured.Duration.Seconds(), 1e-9)
	lv.VUs, lv.Seconds, lv.Requests, lv.RPS = n, measured.Duration.Seconds(), st.Requests, float64(st.Requests)/secs
	lv.P50MS, lv.P95MS, lv.P99MS = summary.Millis(st.Latency.Quantile(0.5)), summary.Millis(st.Latency.Quantile(0.95)), summary.Millis(st.Latency.Quantile(0.99))
	if st.Requests > 0 {
		lv.ErrorRate = float64(st.Failed()) / float64(st.Requests)
	}
	lv.Reliability = 1 - lv.ErrorRate
	lv.OKRPS = float64(st.Requests-st.Failed()) / secs
	lv.Verdict = summary.VerdictOf(r.Verdict, r.Model)
	if r.Stop.Reason != engine.Completed {
		lv.Stopped = r.Stop.String()
		lv.LateStart = false // a level cut short is not judged
	}
	return lv, nil
}

// NewResult is the sweep of script by steps of step whose levels are levels (as an agent measured
// them), fitted and judged.
func NewResult(script string, step time.Duration, levels []Level) *Result {
	r := &Result{Script: script, StepS: step.Seconds(), Levels: levels}
	if r.Levels == nil {
		r.Levels = []Level{}
	}
	r.judge()
	return r
}

// judge fits the USL to the levels and finds the knee.
func (r *Result) judge() {
	var pts []usl.Point
	var lvs []usl.Level
	var judged []Level
	for _, l := range r.Levels {
		if !l.complete() {
			continue
		}
		judged = append(judged, l)
		pts = append(pts, usl.Point{N: float64(l.VUs), X: l.OKRPS})
		lvs = append(lvs, usl.Level{N: float64(l.VUs), X: l.OKRPS, P95MS: l.P95MS})
	}
	fit, err := usl.FitPoints(pts)
	if err == nil && !finite(fit.Lambda, fit.Sigma, fit.Kappa, fit.R2) {
		err = errors.New("the levels' figures are out of range for a fit")
	}
	if err != nil {
		r.FitError = err.Error()
	} else {
		r.Fit = &fit
		if n, x := fit.PeakN(), fit.PeakX(); finite(n, x) {
			r.PeakVUs, r.PeakRPS = &n, &x
		}
	}
	if i, ok := usl.Knee(lvs); ok {
		r.KneeVUs = judged[i].VUs
	}
}

// finite reports whether every v is a finite number (JSON has no other).
func finite(vs ...float64) bool {
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// generator is a level's verdict in a word: ok, tool (the generator was the limit) or target
// (the target could not take the load).
func generator(v summary.Verdict) string {
	switch {
	case v.GeneratorLimited:
		return "tool"
	case v.TargetLimited:
		return "target"
	}
	return "ok"
}

// CSVHeader are the columns of a sweep's CSV, one row per level.
var CSVHeader = []string{"vus", "seconds", "requests", "rps", "ok_rps", "p50_ms", "p95_ms", "p99_ms", "error_rate", "reliability",
	"generator", "late_start", "usl_rps", "knee", "stopped"}

// WriteCSV writes r as CSV: CSVHeader, then one row per level; usl_rps is the fit's throughput
// at the level (empty without a fit), knee is true on the knee's row.
func (r *Result) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	f := func(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	for _, l := range r.Levels {
		if err := cw.Write([]string{strconv.Itoa(l.VUs), f(l.Seconds, 3), strconv.FormatInt(l.Requests, 10), f(l.RPS, 1),
			f(l.OKRPS, 1), f(l.P50MS, 3), f(l.P95MS, 3), f(l.P99MS, 3), f(l.ErrorRate, 6), f(l.Reliability, 6), generator(l.Verdict),
			strconv.FormatBool(l.LateStart), r.Fitted(l.VUs), strconv.FormatBool(r.KneeVUs != 0 && l.VUs == r.KneeVUs), l.Stopped}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// PrintLevel writes one level's line as the sweep goes.
func PrintLevel(w io.Writer, l Level) {
	line := fmt.Sprintf("%5d VUs  %9.1f req/s  p50 %-8s p95 %-8s p99 %-8s errors %6.2f%%  generator %s",
		l.VUs, l.RPS, summary.MillisText(l.P50MS), summary.MillisText(l.P95MS), summary.MillisText(l.P99MS), l.ErrorRate*100, generator(l.Verdict))
	if l.LateStart {
		line += "  LATE START"
	}
	if l.Stopped != "" {
		line += "  stopped: " + l.Stopped
	}
	fmt.Fprintln(w, line)
}

// Print writes r: a table of the levels, the fit and the knee.
func (r *Result) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "vus\treq/s\tok req/s\tp50\tp95\tp99\terrors\tgenerator\tlate start\tUSL req/s\t")
	for _, l := range r.Levels {
		mark := ""
		if l.VUs == r.KneeVUs {
			mark = " ← knee"
		}
		fmt.Fprintf(tw, "%d\t%.1f\t%.1f\t%s\t%s\t%s\t%.2f%%\t%s\t%t\t%s\t%s\n", l.VUs, l.RPS, l.OKRPS, summary.MillisText(l.P50MS), summary.MillisText(l.P95MS), summary.MillisText(l.P99MS),
			l.ErrorRate*100, generator(l.Verdict), l.LateStart, cmp.Or(r.Fitted(l.VUs), "-"), mark)
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintln(w, r.FitText())
	fmt.Fprintln(w, r.KneeText())
}

// Fitted is the fit's throughput at vus, in req/s to a decimal; empty without a fit.
func (r *Result) Fitted(vus int) string {
	if r.Fit == nil {
		return ""
	}
	return strconv.FormatFloat(r.Fit.X(float64(vus)), 'f', 1, 64)
}

// FitText is the fit in a sentence.
func (r *Result) FitText() string {
	if r.Fit == nil {
		return "no USL fit: " + r.FitError
	}
	f := r.Fit
	s := fmt.Sprintf("USL fit: λ %.1f req/s per VU, σ (contention) %.4f, κ (crosstalk) %.6f, R² %.3f", f.Lambda, f.Sigma, f.Kappa, f.R2)
	switch {
	case r.PeakVUs != nil:
		s += fmt.Sprintf("; predicted peak %.1f req/s at %.1f VUs", *r.PeakRPS, *r.PeakVUs)
	case f.Sigma > 0:
		s += fmt.Sprintf("; throughput levels off towards %.1f req/s (λ/σ)", f.Lambda/f.Sigma)
	default:
		s += "; no peak predicted (throughput keeps growing)"
	}
	if f.R2 < 0.8 {
		s += "; a poor fit: the levels do not follow the law closely, read the table"
	}
	return s
}

// KneeText is the knee in a sentence, and what it was not told on: levels cut short, levels
// where many requests failed.
func (r *Result) KneeText() string {
	text := fmt.Sprintf("knee: %d VUs: past it successful throughput stops growing while p95 climbs", r.KneeVUs)
	switch {
	case r.KneeVUs != 0:
	case r.Complete() < 3:
		text = fmt.Sprintf("knee: not judged: %d levels ran their whole step, and a knee needs 3", r.Complete())
	default:
		text = "knee: none within the sweep: successful throughput grew (or latency held) at every step"
	}
	for _, l := range r.Levels {
		switch {
		case !l.complete():
			text += fmt.Sprintf("\n  - %d VUs was cut short (%s): left out of the fit and the knee", l.VUs, l.Stopped)
		case l.ErrorRate > MaxErrorRate:
			text += fmt.Sprintf("\n  - %d VUs failed %.0f%% of its requests: only the successful ones count", l.VUs, l.ErrorRate*100)
		}
	}
	return text
}

// MaxErrorRate is the share of failed requests above which a level is called out: its
// throughput is mostly failures.
const MaxErrorRate = 0.10
