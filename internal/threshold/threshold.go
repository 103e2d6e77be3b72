// Package threshold judges a run's thresholds ("p95 < 300ms", "error_rate < 1% over 30s") on its
// metrics: second by second while it runs, so that an aborting threshold can stop it, and on the
// whole run at the end. It works on merged snapshots, so the same judge serves a local run and
// the server, which merges the seconds of every agent of a run before judging them.
package threshold

import (
	"fmt"
	"time"

	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/script"
)

// Result is a threshold's verdict on the run.
type Result struct {
	Threshold *script.Threshold
	// Observed is in the threshold's unit (seconds for latencies): over the whole run, or for a
	// windowed threshold the worst of its full windows (the whole run when none was full).
	Observed float64
	// Worst says Observed is the worst full window's.
	Worst  bool
	Passed bool
	// BrokenAt is when a windowed or aborting threshold first broke, if it did.
	BrokenAt time.Duration
}

// String reads like "p95 < 300ms: 212ms, passed".
func (r Result) String() string {
	verdict := "passed"
	if !r.Passed {
		verdict = "FAILED"
		if r.BrokenAt > 0 {
			verdict += fmt.Sprintf(" (first at %s)", r.BrokenAt.Round(time.Second))
		}
	}
	observed := formatObserved(r.Threshold, r.Observed)
	if r.Worst {
		observed += " at worst"
	}
	return fmt.Sprintf("%s: %s, %s", r.Threshold.Text(), observed, verdict)
}

// ObservedText is the observed figure in the threshold's unit: "212ms", "0.50%", "98.0/s".
func (r Result) ObservedText() string { return formatObserved(r.Threshold, r.Observed) }

func formatObserved(t *script.Threshold, v float64) string {
	switch {
	case t.Metric.IsLatency():
		return metrics.FormatDuration(time.Duration(v * float64(time.Second)))
	case t.Metric == script.ErrorRate:
		return fmt.Sprintf("%.2f%%", v*100)
	case t.Metric == script.RPS:
		return fmt.Sprintf("%.1f/s", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// Watch evaluates thresholds each second (windowed ones over their window, aborting ones as the
// run goes) and at the end. It is not safe for concurrent use: one goroutine feeds it the run's
// seconds in order.
type Watch struct {
	ts       []*script.Threshold
	windows  []*metrics.Window // per threshold, nil for whole-run thresholds
	total    *metrics.Snapshot // cumulative, for aborting whole-run thresholds
	brokenAt []time.Duration
	// worst is each windowed threshold's worst full window so far; judged says it has one.
	worst  []float64
	judged []bool
}

// New returns a watch over ts. A threshold on no particular request judges every request label
// together (groups and hooks are measured apart and are not requests).
func New(ts []*script.Threshold) *Watch {
	w := &Watch{ts: ts, windows: make([]*metrics.Window, len(ts)), brokenAt: make([]time.Duration, len(ts)),
		worst: make([]float64, len(ts)), judged: make([]bool, len(ts))}
	for i, t := range ts {
		if t.Window > 0 {
			w.windows[i] = metrics.NewWindow(t.Window)
		}
	}
	return w
}

// Observe takes the run's next second, which ends elapsed into the run, and returns a reason to
// abort the run, or "" to go on. The watch keeps sec.
func (w *Watch) Observe(sec *metrics.Snapshot, elapsed time.Duration) string {
	if w.total == nil {
		w.total = &metrics.Snapshot{Start: sec.Start, Labels: map[metrics.Key]*metrics.Stats{}}
	}
	w.total.Merge(sec)
	reason := ""
	for i, t := range w.ts {
		var (
			snap   *metrics.Snapshot
			period time.Duration
		)
		switch {
		case w.windows[i] != nil:
			w.windows[i].Add(sec)
			if elapsed < t.Window {
				continue // judge a window only once it is full: a ramp-up is not a breach
			}
			snap, period = w.windows[i].Merged(), t.Window
		case t.Abort:
			snap, period = w.total, elapsed
		default:
			continue
		}
		v, ok := w.value(t, snap, period)
		if ok && w.windows[i] != nil && (!w.judged[i] || t.Worse(v, w.worst[i])) {
			w.worst[i], w.judged[i] = v, true
		}
		if !ok || t.Holds(v) {
			continue
		}
		if w.brokenAt[i] == 0 {
			w.brokenAt[i] = max(elapsed, time.Nanosecond)
		}
		if t.Abort && reason == "" {
			reason = fmt.Sprintf("threshold %q broken at %s (observed %s)", t.Text(), elapsed.Round(time.Second), formatObserved(t, v))
		}
	}
	return reason
}

// Final judges every threshold on the whole run, total over elapsed; a windowed or aborting one
// fails if it broke in any second observed.
func (w *Watch) Final(total *metrics.Snapshot, elapsed time.Duration) []Result {
	out := make([]Result, len(w.ts))
	for i, t := range w.ts {
		v, ok := w.value(t, total, elapsed)
		out[i] = Result{Threshold: t, Observed: v, Passed: !ok || t.Holds(v), BrokenAt: w.brokenAt[i]}
		if w.judged[i] {
			out[i].Observed, out[i].Worst, out[i].Passed = w.worst[i], true, t.Holds(w.worst[i])
		}
		if w.brokenAt[i] > 0 {
			out[i].Passed = false
		}
	}
	return out
}

// Standing judges every threshold on the seconds observed so far, which end elapsed into the
// run, as Final would were the run to end there: what a live view shows. Nil before the first
// second.
func (w *Watch) Standing(elapsed time.Duration) []Result {
	if w.total == nil {
		return nil
	}
	return w.Final(w.total, elapsed)
}

// value computes a threshold's metric over snap, which covers period. ok is false when there is
// nothing to judge yet (no request in scope).
func (w *Watch) value(t *script.Threshold, snap *metrics.Snapshot, period time.Duration) (float64, bool) {
	var st *metrics.Stats
	if t.Request != "" {
		st = metrics.NewStats()
		st.Merge(snap.Labels[metrics.RequestKey(t.Request)])
		st.Merge(snap.Labels[metrics.StepKey(t.Request)]) // a WebSocket session's or receive's
	} else {
		st = snap.Requests()
	}
	if st.Requests == 0 && t.Metric != script.Count && t.Metric != script.RPS {
		return 0, false
	}
	if q, ok := t.Metric.Percentile(); ok {
		return st.Latency.Quantile(q / 100).Seconds(), true
	}
	switch t.Metric {
	case script.Avg:
		return st.Latency.Mean().Seconds(), true
	case script.Min:
		return st.Latency.Min().Seconds(), true
	case script.Max:
		return st.Latency.Max().Seconds(), true
	case script.ErrorRate:
		return float64(st.Failed()) / float64(st.Requests), true
	case script.RPS:
		if period <= 0 {
			return 0, false
		}
		return float64(st.Requests) / period.Seconds(), true
	case script.Count:
		return float64(st.Requests), true
	}
	return 0, false
}
