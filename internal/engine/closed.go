package engine

import (
	"context"
	"errors"
	"sync"
	"time"
)

// runClosed runs the closed model: VUs start evenly spread over the ramp-up and each runs
// iterations back to back until startCtx ends (duration reached, iteration budget spent, data
// exhausted, abort). An iteration already running may finish until hardCtx ends. A shard runs
// the VUs its segment owns, each at its place in the whole run's ramp-up, and its share of the
// iteration budget.
func (p *plan) runClosed(startCtx, hardCtx context.Context, start time.Time) {
	n := p.load.VUs
	// A shard's share of a budget may be 0 (1 iteration over 2 agents): it runs none, rather
	// than as if there were no budget.
	bounded, budget := p.load.Iterations > 0, p.opts.Segment.Scale(int64(p.load.Iterations))
	var wg sync.WaitGroup
	for i := range n {
		if !p.opts.Segment.Owns(int64(i)) {
			continue
		}
		due := start
		if p.load.RampUp > 0 && n > 1 {
			due = start.Add(p.load.RampUp * time.Duration(i) / time.Duration(n))
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
			v := p.newVU(i, hardCtx)
			defer v.close()
			p.health.vuStarted()
			defer p.health.vuEnded()
			for startCtx.Err() == nil {
				if bounded && p.started.Add(1) > budget {
					return
				}
				err := v.iteration(hardCtx, time.Time{})
				switch {
				case errors.Is(err, errExhausted):
					p.exhaust(err)
					return
				case err != nil:
					p.interrupted.Add(1)
					return
				}
				p.iterations.Add(1)
			}
		}()
	}
	wg.Wait()
}
