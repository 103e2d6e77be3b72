package summary

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/barrage-load/barrage/internal/monitor"
	"github.com/barrage-load/barrage/internal/script"
)

// UnstableCV is the coefficient of variation of the per-second request rate, over a run's
// steady state, above which the run is called unstable: its throughput moved by more than a
// tenth around its mean, so its averages hide what happened. A rate so low that counting alone
// varies more (2/√mean: at 100 requests/s, 20%) raises the bar to that.
const UnstableCV = 0.10

// minSteadySeconds is the fewest whole seconds of steady state a stability figure is told on.
const minSteadySeconds = 5

// Stability is how steady a run's throughput was over its steady state: after its ramp-up,
// before its ramp-down, without its first and last seconds.
type Stability struct {
	// CV is the coefficient of variation (standard deviation over mean) of the requests/s of
	// each whole second of the steady state.
	CV      float64 `json:"cv"`
	MeanRPS float64 `json:"mean_rps"`
	// FromS and ToS are the seconds it covers, counted from the run's start: [FromS, ToS).
	FromS   int64 `json:"from_s"`
	ToS     int64 `json:"to_s"`
	Seconds int   `json:"seconds"`
	// Limit is the CV above which this run is unstable: UnstableCV, or what counting alone
	// makes at this rate when that is more.
	Limit    float64 `json:"limit"`
	Unstable bool    `json:"unstable"`
	// Causes are what the target's own metrics (the script's monitors) say about an unstable
	// throughput: a CPU mostly waiting on storage, a series that moved with the throughput.
	Causes []string `json:"causes,omitempty"`
	// Note says which agents' seconds it covers when not all of them went on to the end.
	Note string `json:"note,omitempty"`
}

// String is the stability as people read it.
func (s Stability) String() string {
	word := "steady"
	if s.Unstable {
		word = "UNSTABLE: the averages hide how the throughput moved"
	}
	out := fmt.Sprintf("stability: requests/s varied %.1f%% (CV, limit %.0f%%) around %.1f/s over seconds %d-%d: %s",
		s.CV*100, s.Limit*100, s.MeanRPS, s.FromS, s.ToS, word)
	if s.Note != "" {
		out += " (" + s.Note + ")"
	}
	return out
}

// SteadyWindow is the part of a run of w, which lasted elapsed, whose scheduled load is at its
// peak: in the open model, from when the arrival rate first reaches its highest to when it
// last has it; in the closed model, after the ramp-up. The first and last seconds are left out:
// the load starts and winds down in them.
func SteadyWindow(w script.Workload, elapsed time.Duration) (from, to time.Duration) {
	from, to = 0, elapsed
	if w.Model == script.Closed {
		from = w.RampUp
	}
	if len(w.Stages) > 0 { // rates, or VUs: the steady state is at the peak
		peak := 0.0
		for _, st := range w.Stages {
			peak = max(peak, st.From, st.To)
		}
		first, last, at := time.Duration(-1), time.Duration(0), time.Duration(0)
		for _, st := range w.Stages {
			start, end := at, at+st.Duration
			at = end
			var reach, leave time.Duration = -1, -1
			switch {
			case st.From == peak && st.To == peak:
				reach, leave = start, end
			case st.To == peak:
				reach, leave = end, end
			case st.From == peak:
				reach, leave = start, start
			}
			if reach < 0 {
				continue
			}
			if first < 0 {
				first = reach
			}
			last = leave
		}
		from, to = max(first, 0), min(last, elapsed)
	}
	return max(from, time.Second), min(to, elapsed-time.Second)
}

// NewStability is the stability of a run whose whole seconds had the request rates rps (rps[i]
// is second i, from the run's start), over its steady state [from, to); nil when fewer than
// minSteadySeconds whole seconds fall in it.
func NewStability(rps []float64, from, to time.Duration) *Stability {
	first := int64(math.Ceil(from.Seconds()))
	end := min(int64(math.Floor(to.Seconds())), int64(len(rps)))
	if end-first < minSteadySeconds {
		return nil
	}
	window := rps[first:end]
	var sum float64
	for _, r := range window {
		sum += r
	}
	mean := sum / float64(len(window))
	var sq float64
	for _, r := range window {
		sq += (r - mean) * (r - mean)
	}
	s := &Stability{MeanRPS: mean, FromS: first, ToS: end, Seconds: len(window), Limit: UnstableCV}
	if mean > 0 {
		s.CV = math.Sqrt(sq/float64(len(window))) / mean
		s.Limit = max(UnstableCV, 2/math.Sqrt(mean))
	}
	s.Unstable = s.CV > s.Limit
	return s
}

// Thresholds of the causes a monitor may point at.
const (
	// IOWaitCause is the share of CPU time in iowait, averaged over the steady state, above
	// which an unstable throughput is put down to the target's storage.
	IOWaitCause = 50.0
	// CorrelationCause is the correlation between a monitor series and the requests/s, over
	// the steady state, above which (in magnitude) the series is named as moving with it.
	CorrelationCause = 0.7
)

// Explain names, when the throughput of a run whose seconds had the request rates rps was
// unstable, the monitor series that point at a cause: a CPU mode share of iowait averaging
// above IOWaitCause percent, and any series whose values correlated with the requests/s by
// CorrelationCause or more over the steady state (five seconds with a value at least).
func (s *Stability) Explain(rps []float64, monitors []*monitor.Series) {
	if s == nil || !s.Unstable {
		return
	}
	for _, m := range monitors {
		var xs, ys []float64
		for i := s.FromS; i < s.ToS && i < int64(len(rps)); i++ {
			if i < int64(len(m.Values)) && m.Values[i] != nil {
				xs, ys = append(xs, *m.Values[i]), append(ys, rps[i])
			}
		}
		if len(xs) < minSteadySeconds {
			continue
		}
		name := m.Monitor + ": " + m.Series
		if m.Unit == monitor.UnitPercent && strings.Contains(m.Series, `mode="iowait"`) {
			if mean := meanOf(xs); mean > IOWaitCause {
				s.Causes = append(s.Causes, fmt.Sprintf("%s averaged %.0f%% of the CPU time: the target was waiting on its storage", name, mean))
				continue
			}
		}
		if r := correlation(xs, ys); math.Abs(r) >= CorrelationCause {
			way := "with"
			if r < 0 {
				way = "against"
			}
			s.Causes = append(s.Causes, fmt.Sprintf("%s moved %s the throughput (correlation %.2f)", name, way, r))
		}
	}
}

func meanOf(xs []float64) float64 {
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// correlation is Pearson's r of xs and ys; 0 when either does not vary.
func correlation(xs, ys []float64) float64 {
	mx, my := meanOf(xs), meanOf(ys)
	var sxy, sxx, syy float64
	for i := range xs {
		dx, dy := xs[i]-mx, ys[i]-my
		sxy, sxx, syy = sxy+dx*dy, sxx+dx*dx, syy+dy*dy
	}
	if sxx == 0 || syy == 0 {
		return 0
	}
	return sxy / math.Sqrt(sxx*syy)
}

// LiveWindow is how many of the latest seconds of the steady state the live view's stability is
// told on.
const LiveWindow = 10

// LiveStability follows a run's stability as its seconds come: over the latest LiveWindow seconds
// of the steady state its workload plans (none during the ramps), as the summary tells it over
// the whole.
type LiveStability struct {
	from, to int64 // the planned steady state, in seconds from the start: [from, to)
	rps      []float64
}

// NewLiveStability follows a run of w. A run bounded by iterations, whose end is unknown, is
// followed from its second second on.
func NewLiveStability(w script.Workload) *LiveStability {
	planned := w.Duration
	if planned <= 0 {
		planned = 7 * 24 * time.Hour
	}
	from, to := SteadyWindow(w, planned)
	return &LiveStability{from: int64(math.Ceil(from.Seconds())), to: int64(math.Floor(to.Seconds()))}
}

// Add takes the second of index (from 0) and its requests/s, and returns the stability of the
// latest seconds of the steady state; nil until it has minSteadySeconds of them.
func (l *LiveStability) Add(index int64, rps float64) *Stability {
	if index < l.from || index >= l.to {
		return nil
	}
	l.rps = append(l.rps, rps)
	if len(l.rps) > LiveWindow {
		l.rps = l.rps[1:]
	}
	st := NewStability(l.rps, 0, time.Duration(len(l.rps))*time.Second)
	if st != nil {
		st.FromS, st.ToS = index+1-int64(len(l.rps)), index+1
	}
	return st
}
