package run

import (
	"errors"
	"slices"
	"time"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/script"
)

// Workload is the load a run of s asks for with the overrides o, before it is split into shards:
// the script's, with o's VUs, Duration, Rate, Stages or Sweep folded in. s is not changed. The
// server derives it when it admits a run, the engine when it plans one: the same function, so
// what was admitted is what runs.
func Workload(s *script.Script, o barrage.LoadOverrides) script.Workload {
	w := s.Load
	w.Stages = slices.Clone(w.Stages)
	Override(&w, o)
	return w
}

// Override folds the overrides (the command line's --vus, --duration, --rate, a run's load)
// into the workload w. A sweep's workload is its whole: the closed model at its highest level
// for all its steps.
func Override(w *script.Workload, o barrage.LoadOverrides) {
	if sw := o.Sweep; sw != nil && len(sw.VUs) > 0 {
		w.Model, w.VUs, w.Duration, w.Iterations, w.RampUp = script.Closed, slices.Max(sw.VUs), time.Duration(len(sw.VUs))*sw.Step, 0, 0
		w.Stages, w.MaxVUs = nil, 0
		return
	}
	if len(o.Stages) > 0 {
		w.Model, w.Stages, w.Duration, w.Iterations = script.Open, make([]script.Stage, len(o.Stages)), 0, 0
		prev := 0.0
		for i, st := range o.Stages {
			from := st.To
			if st.Ramp {
				from = prev
			}
			w.Stages[i] = script.Stage{From: from, To: st.To, Duration: st.Duration}
			w.Duration += st.Duration
			prev = st.To
		}
		openMaxVUs(w, o.VUs)
		return
	}
	if o.Rate > 0 {
		d := o.Duration
		if d == 0 {
			d = w.Duration
		}
		w.Model, w.Stages, w.Duration = script.Open, []script.Stage{{From: o.Rate, To: o.Rate, Duration: d}}, d
		openMaxVUs(w, o.VUs)
		return
	}
	if o.VUs > 0 {
		if w.Model == script.Open {
			w.MaxVUs = o.VUs
		} else {
			w.VUs = o.VUs
		}
	}
	if o.Duration > 0 {
		w.Duration = o.Duration
		if len(w.Stages) > 0 {
			// Stretch or cut the last stage so the stages add up to the new duration.
			var before time.Duration
			for _, st := range w.Stages[:len(w.Stages)-1] {
				before += st.Duration
			}
			last := &w.Stages[len(w.Stages)-1]
			last.Duration = max(o.Duration-before, time.Second)
		}
		if w.Model == script.Closed {
			w.Iterations = 0
		}
	}
}

// openMaxVUs bounds the VUs of a workload made open by an override: vus when given, else the
// script's own bound, else its closed model's VUs with 100 at least.
func openMaxVUs(w *script.Workload, vus int) {
	if vus > 0 {
		w.MaxVUs = vus
	}
	if w.MaxVUs == 0 {
		w.MaxVUs = max(w.VUs, 100)
	}
}

// CheckScenarioOverrides refuses the options that would replace the load of a script of
// scenarios, which has one per scenario.
func CheckScenarioOverrides(s *script.Script, o barrage.LoadOverrides) error {
	if len(s.Scenarios) > 0 && (o.VUs > 0 || o.Rate > 0 || len(o.Stages) > 0 || o.Sweep != nil) {
		return errors.New("a script of scenarios takes each scenario's load: only --duration changes it (every scenario's)")
	}
	return nil
}
