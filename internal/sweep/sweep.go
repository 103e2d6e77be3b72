// Package sweep tells where a target stops scaling from a concurrency sweep's levels (a script
// run at one concurrency after another; package pipeline runs them): each level's throughput,
// latencies, errors and generator verdict, a Universal Scalability Law fit over the levels, and
// the knee, the level past which throughput stops growing while latency climbs.
package sweep

import (
	"cmp"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/barrage-load/barrage/internal/run"
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

// LevelsOf reads the levels of a sweep from its shard's account as the server stored it
// (run.Account's SweepLevels); none when the account has none.
func LevelsOf(account []byte) ([]Level, error) {
	acc, err := run.ReadAccount(account)
	if err != nil || len(acc.SweepLevels) == 0 {
		return nil, err
	}
	var levels []Level
	return levels, json.Unmarshal(acc.SweepLevels, &levels)
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
