package engine

import (
	"fmt"
	"time"

	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/script"
)

// ThresholdResult is a threshold's verdict on the run.
type ThresholdResult struct {
	Threshold *script.Threshold
	Observed  float64 // in the threshold's unit (seconds for latencies)
	Passed    bool
	// BrokenAt is when a windowed or aborting threshold first broke, if it did.
	BrokenAt time.Duration
}

// String reads like "p95 < 300ms: 212ms, passed".
func (r ThresholdResult) String() string {
	verdict := "passed"
	if !r.Passed {
		verdict = "FAILED"
		if r.BrokenAt > 0 {
			verdict += fmt.Sprintf(" (first at %s)", r.BrokenAt.Round(time.Second))
		}
	}
	return fmt.Sprintf("%s: %s, %s", r.Threshold.Source, formatObserved(r.Threshold, r.Observed), verdict)
}

func formatObserved(t *script.Threshold, v float64) string {
	switch {
	case t.Metric.IsLatency():
		return time.Duration(v * float64(time.Second)).Round(10 * time.Microsecond).String()
	case t.Metric == script.ErrorRate:
		return fmt.Sprintf("%.2f%%", v*100)
	case t.Metric == script.RPS:
		return fmt.Sprintf("%.1f/s", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// thresholdWatch evaluates thresholds each second (windowed ones over their window, aborting
// ones as the run goes) and at the end.
type thresholdWatch struct {
	ts       []*script.Threshold
	windows  []*metrics.Window // per threshold, nil for whole-run thresholds
	requests []string          // the request labels, which "all requests" merges
	total    *metrics.Snapshot // cumulative, for aborting whole-run thresholds
	brokenAt []time.Duration
}

func newThresholdWatch(ts []*script.Threshold, labels []string, nRequests int) *thresholdWatch {
	w := &thresholdWatch{ts: ts, requests: labels[:nRequests], windows: make([]*metrics.Window, len(ts)), brokenAt: make([]time.Duration, len(ts))}
	for i, t := range ts {
		if t.Window > 0 {
			w.windows[i] = metrics.NewWindow(t.Window)
		}
	}
	return w
}

// observe takes one second and returns a reason to abort, or "".
func (w *thresholdWatch) observe(sec *metrics.Snapshot, elapsed time.Duration) string {
	if w.total == nil {
		w.total = &metrics.Snapshot{Start: sec.Start, Labels: map[string]*metrics.Stats{}}
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
		if !ok || t.Holds(v) {
			continue
		}
		if w.brokenAt[i] == 0 {
			w.brokenAt[i] = max(elapsed, time.Nanosecond)
		}
		if t.Abort && reason == "" {
			reason = fmt.Sprintf("threshold %q broken at %s (observed %s)", t.Source, elapsed.Round(time.Second), formatObserved(t, v))
		}
	}
	return reason
}

// final judges every threshold on the whole run; a windowed one fails if it broke in any window.
func (w *thresholdWatch) final(total *metrics.Snapshot, elapsed time.Duration) []ThresholdResult {
	out := make([]ThresholdResult, len(w.ts))
	for i, t := range w.ts {
		v, ok := w.value(t, total, elapsed)
		out[i] = ThresholdResult{Threshold: t, Observed: v, Passed: !ok || t.Holds(v), BrokenAt: w.brokenAt[i]}
		if w.brokenAt[i] > 0 {
			out[i].Passed = false
		}
	}
	return out
}

// value computes a threshold's metric over snap, which covers period. ok is false when there is
// nothing to judge yet (no request in scope).
func (w *thresholdWatch) value(t *script.Threshold, snap *metrics.Snapshot, period time.Duration) (float64, bool) {
	st := metrics.NewStats()
	if t.Request != "" {
		if s, ok := snap.Labels[t.Request]; ok {
			st.Merge(s)
		}
	} else {
		for _, l := range w.requests {
			if s, ok := snap.Labels[l]; ok {
				st.Merge(s)
			}
		}
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
