package pipeline

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/barrage-load/barrage/internal/engine"
	"github.com/barrage-load/barrage/internal/monitor"
	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/internal/sweep"
)

// Options are a load's: the engine's (the load, its schedule's start and segment, where its
// seconds go, whether it judges its own thresholds), and what goes on beside the engine.
type Options struct {
	Engine engine.Options
	// Monitors, when set, scrapes the script's monitors with this client while the load goes, on
	// the load's schedule: a local run does, and the one shard of a run whose segment starts it.
	Monitors *http.Client
	// OnMonitors, when set, receives each second's monitor values as they are scraped.
	OnMonitors func(index int64, values []*float64, units []string)
}

// Outcome is what a load measured: the run's result, or a sweep's, and the account that goes
// with either (an agent reports it when its shard ends).
type Outcome struct {
	// Result is the run's; nil for a sweep.
	Result *run.Result
	// Sweep is a sweep's levels, fitted and judged; nil for a run, or a sweep whose first level
	// could not start.
	Sweep *sweep.Result
	// Err is why a sweep's level could not be run, when one could not.
	Err error
	// Stop is why the load stopped.
	Stop run.Stop
	// Account is the load's account: the run's counts, the sweep's levels, the monitors that
	// failed.
	Account run.Account
	// Monitors are the target's own metrics, second by second, when they were scraped.
	Monitors []*monitor.Series
}

// Load is a script's load under way: a run, or a concurrency sweep's levels one after another
// (Options.Engine.Sweep), with the script's monitors scraped beside it.
type Load struct {
	running *engine.Running // a run's; nil for a sweep
	cancel  context.CancelFunc
	done    chan struct{}
	out     *Outcome

	mu   sync.Mutex
	stop *run.Stop // a sweep's: the first reason it was stopped for
}

// Start begins the load of s in the background and returns at once; Wait returns its Outcome.
// A run that cannot start (a limit refused, a bad option) is an error and nothing was sent.
func Start(ctx context.Context, s *script.Script, o Options) (*Load, error) {
	opts := o.Engine
	if opts.Start.IsZero() {
		opts.Start = time.Now() // the monitors' schedule is the load's
	}
	l := &Load{done: make(chan struct{})}
	stopMonitors := func() ([]*monitor.Series, []monitor.Failure) { return nil, nil }
	if o.Monitors != nil && len(s.Monitors) > 0 {
		stopMonitors = monitor.Start(ctx, s.Monitors, o.Monitors, opts.Start, o.OnMonitors)
	}
	finish := func(out *Outcome) {
		out.Monitors, out.Account.MonitorFailures = stopMonitors()
		l.out = out
		close(l.done)
	}
	if sw := opts.Sweep; sw != nil {
		ctx, l.cancel = context.WithCancel(ctx)
		go func() {
			defer l.cancel()
			res, err := Sweep(ctx, s, SweepOptions{VUs: sw.VUs, Step: sw.Step, Engine: opts, Start: opts.Start})
			out := &Outcome{Sweep: res, Err: err}
			if res != nil {
				out.Account.SweepLevels, out.Err = marshalLevels(res.Levels, err)
			}
			l.mu.Lock()
			if l.stop != nil {
				out.Stop = *l.stop
			}
			l.mu.Unlock()
			finish(out)
		}()
		return l, nil
	}
	r, err := engine.Start(ctx, s, opts)
	if err != nil {
		stopMonitors()
		return nil, err
	}
	l.running = r
	go func() {
		res := r.Wait()
		finish(&Outcome{Result: res, Stop: res.Stop, Account: run.AccountOf(res)})
	}()
	return l, nil
}

// Stop cuts the load short (engine.Running.Stop); a sweep's levels end at once, and one cut
// short is not judged. The first reason given is the one the Outcome keeps.
func (l *Load) Stop(reason run.StopReason, detail string) {
	if l.running != nil {
		l.running.Stop(reason, detail)
		return
	}
	l.stopSweep(reason, detail)
}

// Drain stops the load at the requests' edge, waiting within at most for those in flight
// (engine.Running.Drain); a sweep's levels are judged whole or not at all, so it stops as Stop.
func (l *Load) Drain(reason run.StopReason, detail string, within time.Duration) {
	if l.running != nil {
		l.running.Drain(reason, detail, within)
		return
	}
	l.stopSweep(reason, detail)
}

func (l *Load) stopSweep(reason run.StopReason, detail string) {
	l.mu.Lock()
	if l.stop == nil {
		l.stop = &run.Stop{Reason: reason, Detail: detail}
	}
	l.mu.Unlock()
	l.cancel()
}

// Done is closed when the load has ended and its Outcome is ready.
func (l *Load) Done() <-chan struct{} { return l.done }

// Wait blocks until the load has ended, its seconds delivered and its monitors stopped, and
// returns what it measured.
func (l *Load) Wait() *Outcome {
	<-l.done
	return l.out
}
