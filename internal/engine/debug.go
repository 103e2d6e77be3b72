package engine

import (
	"context"
	"errors"
	"time"

	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/script"
)

// Debug runs one iteration of one VU (of each scenario, when the script has them), calling opts.Trace with every exchange, whatever the
// script's load. It returns the iteration's error, if any (a sequential data file with no row,
// or ctx ending).
func Debug(ctx context.Context, s *script.Script, opts Options) error {
	if opts.Trace == nil {
		return errors.New("debug needs a Trace function")
	}
	p, err := compile(s, opts)
	if err != nil {
		return err
	}
	p.rec = metrics.NewRecorder(p.labels, time.Now())
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the element plugins' prefetching
	if err := p.startFeeds(ctx); err != nil {
		return err
	}
	for _, sc := range p.scenarios { // one iteration of each scenario, in order
		v := p.newVU(sc, 0, ctx)
		err := v.iteration(ctx, time.Time{})
		v.close()
		if err != nil {
			return err
		}
	}
	return nil
}
