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
//
// One goroutine keeps the schedule and hands each arrival's due time to a ready VU; each VU has
// a goroutine of its own for the run, which waits for its next arrival. At rates the clock
// cannot wake for one by one, the schedule is late by the time its last wake-up took, and
// starts every arrival then due at once, each measured from its own due time: the lateness is
// the generator's, and counted as such.
func (p *plan) runOpen(sc *scenarioPlan, startCtx, hardCtx context.Context, start time.Time) {
	pool := openPool{p: p, sc: sc, hardCtx: hardCtx, back: make(chan struct{}, 1)}
	defer pool.close()

	end := start
	for _, st := range sc.load.Stages {
		end = end.Add(st.Duration)
	}
	clock := newArrivalClock()
	defer clock.close()
	// Arrivals are spaced by the area under the rate curve: the n-th iteration is due when the
	// stages' cumulative arrivals reach n. Spacing by the rate at the start of each gap instead
	// would, on a ramp from zero, wait almost forever for the second arrival.
	//
	// now is when the clock was last read: the arrivals due by then start without reading it
	// again, each said to start then, late by no more than the batch took to hand out. When
	// every VU is busy, the schedule waits for one to be back rather than for each arrival:
	// those due until then (busyUntil) are dropped, on time.
	stageStart := start
	cum, n := 0.0, 1.0
	var now, busyUntil time.Time
	for _, st := range sc.load.Stages {
		total := stageArrivals(st)
		for ; n <= cum+total+1e-9; n++ {
			if !p.opts.Segment.Owns(int64(n) - 1) {
				continue // another shard's arrival
			}
			due := stageStart.Add(arrivalTime(st, n-cum))
			if !due.After(busyUntil) {
				p.health.observe(due, due)
				p.health.dropped.Add(1)
				continue
			}
			if due.After(now) {
				if !clock.waitUntil(startCtx, due) {
					return
				}
				now = time.Now()
			} else if startCtx.Err() != nil {
				return
			}
			p.health.observe(due, now)
			if pool.start(due) {
				continue
			}
			p.health.dropped.Add(1)
			if !pool.awaitReady(startCtx, end) {
				return
			}
			now = time.Now()
			busyUntil = now
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

// openPool is an open scenario's VUs: each runs in a goroutine of its own, from its first
// arrival to the end of the run, and waits for its next arrival on a channel of its own. A VU
// that finishes an iteration goes back on the ready stack, and the last back is the first out:
// the fewest VUs, with their connections warm, serve the arrivals.
type openPool struct {
	p       *plan
	sc      *scenarioPlan
	hardCtx context.Context
	wg      sync.WaitGroup
	created int       // by the scheduler's goroutine alone
	all     []*openVU // every VU made, by the scheduler's goroutine alone

	mu    sync.Mutex
	ready []*openVU
	// waiting says the scheduler waits for a VU to be back, which back tells it.
	waiting bool
	back    chan struct{}
	timer   *time.Timer // awaitReady's, reused
}

// openVU is a VU of the open model and the channel its arrivals come by.
type openVU struct {
	v    *vu
	next chan time.Time // an arrival's due time; closed at the end of the run
}

// start hands an arrival due at due to a ready VU, or to a new one while there are fewer than
// MaxVUs; false when every VU is busy.
func (o *openPool) start(due time.Time) bool {
	var w *openVU
	o.mu.Lock()
	if n := len(o.ready); n > 0 {
		w = o.ready[n-1]
		o.ready = o.ready[:n-1]
	}
	o.mu.Unlock()
	if w == nil {
		if o.created >= o.sc.load.MaxVUs {
			return false
		}
		w = &openVU{v: o.p.newVU(o.sc, int(o.p.opts.Segment.Nth(int64(o.created))), o.hardCtx), next: make(chan time.Time, 1)}
		o.created++
		o.all = append(o.all, w)
		o.wg.Go(func() { o.serve(w) })
	}
	o.p.health.vuStarted()
	w.next <- due // never blocks: a ready VU's channel is empty
	return true
}

// serve runs w's arrivals until the run ends.
func (o *openPool) serve(w *openVU) {
	for due := range w.next {
		o.p.iterate(o.sc, w.v, o.hardCtx, due)
		w.v.rest()
		o.p.health.vuEnded()
		o.mu.Lock()
		o.ready = append(o.ready, w)
		waiting := o.waiting
		o.waiting = false
		o.mu.Unlock()
		if waiting {
			select {
			case o.back <- struct{}{}:
			default: // told already
			}
		}
	}
}

// awaitReady waits until a VU is ready, or the schedule ends at end, and reports false if ctx
// ended first.
func (o *openPool) awaitReady(ctx context.Context, end time.Time) bool {
	o.mu.Lock()
	if len(o.ready) > 0 || o.created < o.sc.load.MaxVUs {
		o.mu.Unlock()
		return true
	}
	o.waiting = true
	o.mu.Unlock()
	if o.timer == nil {
		o.timer = time.NewTimer(time.Until(end))
	} else {
		o.timer.Reset(time.Until(end))
	}
	defer func() {
		o.mu.Lock()
		o.waiting = false
		o.mu.Unlock()
	}()
	select {
	case <-ctx.Done():
		return false
	case <-o.back:
	case <-o.timer.C:
	}
	return true
}

// close ends every VU's goroutine once its iteration in flight is done, then the VUs.
func (o *openPool) close() {
	if o.timer != nil {
		o.timer.Stop()
	}
	for _, w := range o.all {
		close(w.next)
	}
	o.wg.Wait()
	for _, w := range o.all {
		w.v.close()
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
