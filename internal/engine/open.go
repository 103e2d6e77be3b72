package engine

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/barrage-load/barrage/internal/script"
)

// runOpen runs the open model: iterations arrive at the stages' rate whatever the target does.
// A shard sends the arrivals its segment owns, at their times in the whole run's schedule.
// Each arrival takes an idle VU, or makes a new one while there are fewer than MaxVUs; when
// every VU is busy, the arrival is dropped and counted, so a stalled target shows as dropped
// iterations and growing latencies instead of a politely slower schedule.
func (p *plan) runOpen(sc *scenarioPlan, startCtx, hardCtx context.Context, start time.Time) {
	idle := make(chan *vu, sc.load.MaxVUs)
	var (
		wg      sync.WaitGroup
		created int
		mu      sync.Mutex
		all     []*vu
	)
	defer func() {
		wg.Wait()
		mu.Lock()
		for _, v := range all {
			v.close()
		}
		mu.Unlock()
	}()
	get := func() *vu {
		select {
		case v := <-idle:
			return v
		default:
		}
		if created >= sc.load.MaxVUs {
			return nil
		}
		v := p.newVU(sc, int(p.opts.Segment.Nth(int64(created))), hardCtx)
		created++
		mu.Lock()
		all = append(all, v)
		mu.Unlock()
		return v
	}

	clock := newArrivalClock()
	// Arrivals are spaced by the area under the rate curve: the n-th iteration is due when the
	// stages' cumulative arrivals reach n. Spacing by the rate at the start of each gap instead
	// would, on a ramp from zero, wait almost forever for the second arrival.
	stageStart := start
	cum, n := 0.0, 1.0
	for _, st := range sc.load.Stages {
		total := stageArrivals(st)
		for ; n <= cum+total+1e-9; n++ {
			if !p.opts.Segment.Owns(int64(n) - 1) {
				continue // another shard's arrival
			}
			due := stageStart.Add(arrivalTime(st, n-cum))
			if !clock.waitUntil(startCtx, due) {
				return
			}
			p.health.observe(due, time.Now())
			if v := get(); v == nil {
				p.health.dropped.Add(1)
			} else {
				wg.Add(1)
				p.health.vuStarted()
				go func(v *vu, due time.Time) {
					defer wg.Done()
					defer p.health.vuEnded()
					p.iterate(sc, v, hardCtx, due)
					idle <- v
				}(v, due)
			}
		}
		cum += total
		stageStart = stageStart.Add(st.Duration)
	}
	// The last arrival may come before the end of the last stage: keep the run going to its
	// duration, as the schedule says, then let the graceful stop begin, once every open
	// scenario's schedule has ended (another's arrivals may be due still, even at this very
	// instant). A run with closed scenarios ends at its deadline.
	if sleep(startCtx, time.Until(stageStart)) && p.scheduling.Add(-1) == 0 && p.load.Model == script.Open {
		p.stopStarting()
	}
}

// sleep waits d on the runtime's timer, and reports false if ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// stageArrivals is how many iterations a stage brings: the area under its rate.
func stageArrivals(st script.Stage) float64 {
	return (st.From + st.To) / 2 * st.Duration.Seconds()
}

// arrivalTime is when, into the stage, its k-th arrival is due: the t where the area under the
// linear rate from From to To reaches k.
func arrivalTime(st script.Stage, k float64) time.Duration {
	d := st.Duration.Seconds()
	a, slope := st.From, (st.To-st.From)/d
	var t float64
	if math.Abs(slope) < 1e-12 {
		t = k / a
	} else {
		// a·t + slope·t²/2 = k
		t = (-a + math.Sqrt(a*a+2*slope*k)) / slope
	}
	return time.Duration(min(t, d) * float64(time.Second))
}
