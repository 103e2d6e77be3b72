package engine

import (
	"context"
	"errors"
	"sync"
	"time"
)

// runOpen runs the open model: iterations arrive at the stages' rate whatever the target does.
// Each arrival takes an idle VU, or makes a new one while there are fewer than MaxVUs; when
// every VU is busy, the arrival is dropped and counted, so a stalled target shows as dropped
// iterations and growing latencies instead of a politely slower schedule.
func (p *plan) runOpen(startCtx, hardCtx context.Context, start time.Time) {
	idle := make(chan *vu, p.load.MaxVUs)
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
		if created >= p.load.MaxVUs {
			return nil
		}
		v := p.newVU(created)
		created++
		mu.Lock()
		all = append(all, v)
		mu.Unlock()
		return v
	}

	var elapsedStages time.Duration
	for _, st := range p.load.Stages {
		stageStart := start.Add(elapsedStages)
		elapsedStages += st.Duration
		stageEnd := start.Add(elapsedStages)
		due := stageStart
		for due.Before(stageEnd) {
			rate := st.RateAt(due.Sub(stageStart))
			if rate <= 0 {
				due = due.Add(10 * time.Millisecond)
				continue
			}
			if wait := time.Until(due); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-startCtx.Done():
					t.Stop()
					return
				case <-t.C:
				}
			}
			if startCtx.Err() != nil {
				return
			}
			p.health.observe(due, time.Now())
			v := get()
			if v == nil {
				p.health.dropped.Add(1)
			} else {
				wg.Add(1)
				p.health.activeVUs.Add(1)
				go func(v *vu, due time.Time) {
					defer wg.Done()
					defer p.health.activeVUs.Add(-1)
					err := v.iteration(hardCtx, due)
					switch {
					case errors.Is(err, errExhausted):
						p.exhausted.Store(true)
						p.stopStarting()
					case err != nil:
						p.interrupted.Add(1)
					default:
						p.iterations.Add(1)
					}
					idle <- v
				}(v, due)
			}
			due = due.Add(time.Duration(float64(time.Second) / rate))
		}
	}
}
