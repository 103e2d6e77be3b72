package engine

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/barrage-load/barrage/internal/script"
)

// runClosed runs the closed model: VUs start evenly spread over the ramp-up and each runs
// iterations back to back until startCtx ends (duration reached, iteration budget spent, data
// exhausted, abort). An iteration already running may finish until hardCtx ends. A shard runs
// the VUs its segment owns, each at its place in the whole run's ramp-up, and its share of the
// iteration budget.
func (p *plan) runClosed(sc *scenarioPlan, startCtx, hardCtx context.Context, start time.Time) {
	if len(sc.load.Stages) > 0 {
		p.runClosedStages(sc, startCtx, hardCtx, start)
		return
	}
	n := sc.load.VUs
	// A shard's share of a budget may be 0 (1 iteration over 2 agents): it runs none, rather
	// than as if there were no budget.
	bounded, budget := sc.load.Iterations > 0, p.opts.Segment.Scale(int64(sc.load.Iterations))
	var wg sync.WaitGroup
	for i := range n {
		if !p.opts.Segment.Owns(int64(i)) {
			continue
		}
		due := start
		if sc.load.RampUp > 0 && n > 1 {
			due = start.Add(sc.load.RampUp * time.Duration(i) / time.Duration(n))
		}
		if wait := time.Until(due); wait > 0 {
			select {
			case <-startCtx.Done():
				wg.Wait()
				return
			case <-time.After(wait):
			}
		}
		if startCtx.Err() != nil {
			break
		}
		p.health.observe(due, time.Now())
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := p.newVU(sc, i, hardCtx)
			defer v.close()
			p.health.vuStarted()
			defer p.health.vuEnded()
			for startCtx.Err() == nil {
				if bounded && p.started.Add(1) > budget {
					return
				}
				if !p.iterate(sc, v, hardCtx, time.Time{}) {
					return
				}
			}
		}()
	}
	wg.Wait()
}

// runClosedStages runs the closed model with stages of VUs: VU i (from 0) runs iterations back to
// back while the stages' level is i+1 or more, so VUs join as a stage ramps up and leave, each
// after its iteration in flight, as one ramps down. A shard runs the VUs its segment owns.
func (p *plan) runClosedStages(sc *scenarioPlan, startCtx, hardCtx context.Context, start time.Time) {
	var wg sync.WaitGroup
	for i := range sc.load.VUs {
		if !p.opts.Segment.Owns(int64(i)) {
			continue
		}
		wg.Go(func() {
			var v *vu
			running := false
			defer func() {
				if running {
					p.health.vuEnded()
				}
				if v != nil {
					v.close()
				}
			}()
			for startCtx.Err() == nil {
				now := time.Since(start)
				from, ok := activeFrom(sc.load.Stages, i, now)
				if !ok {
					return
				}
				if from > now {
					if running {
						p.health.vuEnded()
						running = false
					}
					t := time.NewTimer(from - now)
					select {
					case <-startCtx.Done():
						t.Stop()
						return
					case <-t.C:
					}
					continue
				}
				if v == nil {
					v = p.newVU(sc, i, hardCtx)
				}
				if !running {
					p.health.vuStarted()
					running = true
				}
				if !p.iterate(sc, v, hardCtx, time.Time{}) {
					return
				}
			}
		})
	}
	wg.Wait()
}

// activeFrom is the first instant from elapsed on at which the stages' level reaches i+1, so that
// VU i runs; false when it never does again.
func activeFrom(stages []script.Stage, i int, elapsed time.Duration) (time.Duration, bool) {
	need := float64(i + 1)
	at := time.Duration(0)
	for _, st := range stages {
		s, e := at, at+st.Duration
		at = e
		if e <= elapsed {
			continue
		}
		t0 := max(elapsed, s)
		if st.RateAt(t0-s) >= need {
			return t0, true
		}
		if st.To > st.From && st.To >= need {
			frac := (need - st.From) / (st.To - st.From)
			return s + time.Duration(math.Ceil(frac*float64(st.Duration))), true
		}
	}
	return 0, false
}

// iterate runs one iteration of v (due when the open model's schedule said, or zero) and counts
// it: completed, interrupted by the run's end, or not begun for want of data (which ends the
// run). It says whether v may go on.
func (p *plan) iterate(sc *scenarioPlan, v *vu, hardCtx context.Context, due time.Time) bool {
	err := v.iteration(hardCtx, due)
	switch {
	case errors.Is(err, errExhausted):
		p.exhaust(err)
		return false
	case err != nil:
		p.interrupted.Add(1)
		return false
	}
	p.iterations.Add(1)
	sc.iterations.Add(1)
	return true
}
