// Package engine generates load from a script: virtual users run the session against the
// target in the closed model (a fixed number of users) or the open model (an arrival rate), and
// every request is measured into per-second, per-label metrics that merge exactly. It also
// watches itself, so that a saturated generator is reported as such rather than mistaken for a
// slow target.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/script"
)

// Options adjust a run beyond what the script says.
type Options struct {
	// VUs, Duration and Rate override the script's load when not zero. Rate turns the run into
	// an open model with one constant stage of Duration (or the script's duration).
	VUs      int
	Duration time.Duration
	Rate     float64
	// Env looks up environment variables for the script's env section.
	Env func(string) (string, bool)
	// BodyCap is how much of each response body is kept for extraction and assertions; the rest
	// is read and counted but not kept. 0 means 1 MiB.
	BodyCap int
	// Insecure skips TLS certificate verification.
	Insecure bool
	// OnSecond, when set, receives every finished second while the run goes on.
	OnSecond func(Second)
	// Trace, when set, receives every exchange of the run in full (for `barrage debug`).
	Trace func(TraceEvent)
	// Log receives the engine's notices; nil discards them.
	Log *slog.Logger
	// Plugins are the element and url plugins of the script, started and configured, by alias.
	// Source plugins have already rewritten the script and are not needed.
	Plugins map[string]Plugin
}

// Second is one second of a run: its metrics and the generator's health.
type Second struct {
	Elapsed  time.Duration // since the run started, at the end of this second
	Snapshot *metrics.Snapshot
	Health   Health
}

// Result is what a run measured.
type Result struct {
	Script   string
	Model    script.Model
	Start    time.Time
	Elapsed  time.Duration
	Requests []string // request labels, in session order
	Groups   []string // group labels, in session order (prefixed with GroupPrefix in snapshots)
	Total    *metrics.Snapshot
	// Seconds is each second's health (their Snapshot is nil: Options.OnSecond receives it).
	Seconds []Second
	// Iterations counts iterations completed; Dropped the open model's iterations that found
	// no free VU; Interrupted those cut short at the end of the graceful stop.
	Iterations, Dropped, Interrupted int64
	// Unsent counts requests never sent because a variable they use was not set (an earlier
	// extraction found nothing); their groups count as failed.
	Unsent int64
	// Hooks are the aliases of the url plugins whose hook time is recorded under HookPrefix.
	Hooks []string
	// HookErrors counts failed hook calls by reason (a crashed plugin, a timeout, a refusal).
	HookErrors map[string]int64
	// Exhausted says which source of values ran out and ended the run early, if one did.
	Exhausted  string
	Thresholds []ThresholdResult
	Verdict    Verdict
	// Aborted says why the run stopped early, if it did.
	Aborted string
}

// GroupPrefix marks a group's label in snapshots: groups are measured like requests (the time
// from the group's first request to the end of its last) but must not mix with them.
const GroupPrefix = "group: "

// ErrThresholds is returned, wrapped, when a threshold failed; the Result is complete.
var ErrThresholds = errors.New("thresholds failed")

// Run runs s to the end and returns what it measured. The error is nil when the run completed
// and every threshold held, wraps ErrThresholds when one failed, and is anything else when the
// run could not happen.
func Run(ctx context.Context, s *script.Script, opts Options) (*Result, error) {
	p, err := compile(s, opts)
	if err != nil {
		return nil, err
	}
	return p.run(ctx)
}

// plan is a script made ready to run.
type plan struct {
	s        *script.Script
	opts     Options
	load     script.Workload
	requests []*compiledRequest
	groups   []*compiledGroup
	consts   map[string]string
	// baseURL resolves request URLs that turn out relative when rendered, such as a Location
	// header extracted into ${next}: like a browser, against the base.
	baseURL *url.URL
	data    []*dataSource
	feeds   []*elementFeed // element plugins' values
	// hookLabel is the label of each url plugin's hook time, by alias; hooks lists the aliases.
	hookLabel  map[string]int
	hooks      []string
	hookMu     sync.Mutex
	hookErrors map[string]int64
	labels     []string
	rec        *metrics.Recorder
	health     healthMeter
	log        *slog.Logger

	iterations  atomic.Int64
	unsent      atomic.Int64 // requests not sent because a variable they use was not set
	started     atomic.Int64 // iterations started, for the closed model's iteration budget
	interrupted atomic.Int64
	exhausted   atomic.Bool // a sequential data file or an element plugin ran out
	exhaustOnce sync.Once
	exhaustWhy  string
	// stopStarting ends the run's start phase: no new iteration starts; startCtx is that phase.
	stopStarting context.CancelFunc
	startCtx     context.Context
}

type compiledGroup struct {
	g        *script.Group
	label    int
	requests []*compiledRequest
}

type compiledRequest struct {
	r     *script.Request
	label int
	// url and rawURL are the parsed URL and its text when the request's URL is a literal, so
	// it is parsed once.
	url    *url.URL
	rawURL string
	// headers holds each header's value when it is a literal, rendered once.
	headers     []*string
	needsJSON   bool
	needHeader  bool
	needCookies bool
	// runsAfter: a url plugin of the request has something to do after the response.
	runsAfter bool
	// static means every send of the request is the same bytes: literal URL, headers and body,
	// and no cookie jar to consult. Each VU builds it once.
	static bool
}

func compile(s *script.Script, opts Options) (*plan, error) {
	env := opts.Env
	if env == nil {
		env = func(string) (string, bool) { return "", false }
	}
	envVals, err := s.ResolveEnv(env)
	if err != nil {
		return nil, err
	}
	p := &plan{s: s, opts: opts, load: s.Load, consts: envVals, log: opts.Log}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.opts.BodyCap <= 0 {
		p.opts.BodyCap = 1 << 20
	}
	for _, c := range s.Variables.Constants {
		p.consts[c.Name] = c.Value
	}
	for _, df := range s.Variables.Data {
		if df.Rows == nil {
			return nil, fmt.Errorf("data file %s was not loaded", df.File)
		}
		p.data = append(p.data, &dataSource{df: df})
	}
	if s.BaseURL != nil {
		b, err := s.BaseURL.Render(func(n string) (string, bool) { v, ok := p.consts[n]; return v, ok }, nil)
		if err != nil {
			return nil, fmt.Errorf("base_url: %w", err)
		}
		if p.baseURL, err = url.Parse(string(b)); err != nil {
			return nil, fmt.Errorf("base_url: %w", err)
		}
	}
	applyOverrides(&p.load, opts)
	if err := p.compilePlugins(); err != nil {
		return nil, err
	}
	for _, g := range s.Session.Groups {
		cg := &compiledGroup{g: g}
		for _, r := range g.Requests {
			cr := &compiledRequest{r: r, label: len(p.labels)}
			p.labels = append(p.labels, r.Name)
			if lit, ok := r.URL.Literal(); ok && len(r.Query) == 0 {
				u, err := url.Parse(lit)
				if err != nil {
					return nil, fmt.Errorf("request %s: url: %w", r.Name, err)
				}
				cr.url, cr.rawURL = u, u.String()
			}
			for _, h := range r.Headers {
				var lit *string
				if v, ok := h.Value.Literal(); ok {
					lit = &v
				}
				cr.headers = append(cr.headers, lit)
			}
			cr.static = cr.url != nil && !s.Session.Cookies && !r.HTTP2 && r.Redirects == 0 && len(r.Plugins) == 0
			// A url plugin that runs after the response reads its headers.
			cr.runsAfter = p.runsAfter(r)
			cr.needHeader = cr.runsAfter
			for _, lit := range cr.headers {
				cr.static = cr.static && lit != nil
			}
			if r.Body != nil {
				_, lit := r.Body.Content.Literal()
				cr.static = cr.static && lit
			}
			for _, x := range r.Extract {
				cr.needsJSON = cr.needsJSON || x.Kind == script.ExtractJSON
				cr.needHeader = cr.needHeader || x.Kind == script.ExtractHeader
				cr.needCookies = cr.needCookies || x.Kind == script.ExtractCookie
			}
			for _, a := range r.Assert {
				cr.needsJSON = cr.needsJSON || a.Kind == script.AssertJSON
			}
			cg.requests = append(cg.requests, cr)
			p.requests = append(p.requests, cr)
		}
		p.groups = append(p.groups, cg)
	}
	for _, cg := range p.groups {
		cg.label = len(p.labels)
		p.labels = append(p.labels, GroupPrefix+cg.g.Name)
	}
	p.hookLabels()
	return p, nil
}

// applyOverrides folds the command line's --vus, --duration and --rate into the workload.
func applyOverrides(w *script.Workload, o Options) {
	if o.Rate > 0 {
		d := o.Duration
		if d == 0 {
			d = w.Duration
		}
		w.Model, w.Stages, w.Duration = script.Open, []script.Stage{{From: o.Rate, To: o.Rate, Duration: d}}, d
		if o.VUs > 0 {
			w.MaxVUs = o.VUs
		}
		if w.MaxVUs == 0 {
			w.MaxVUs = max(w.VUs, 100)
		}
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
		if w.Model == script.Open && len(w.Stages) > 0 {
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

func (p *plan) run(ctx context.Context) (*Result, error) {
	start := time.Now()
	p.rec = metrics.NewRecorder(p.labels, start)
	p.health.rotate(start)
	res := &Result{Script: p.s.Name, Model: p.load.Model, Start: start}
	for _, r := range p.requests {
		res.Requests = append(res.Requests, r.r.Name)
	}
	for _, g := range p.groups {
		res.Groups = append(res.Groups, g.g.Name)
	}
	res.Hooks = p.hooks

	// startCtx ends when no new iteration may start (duration reached, abort, data exhausted);
	// hardCtx when running ones are cut short (graceful stop over, abort, caller gone).
	startCtx, stopStarting := context.WithCancel(ctx)
	defer stopStarting()
	p.stopStarting, p.startCtx = stopStarting, startCtx
	hardCtx, stopHard := context.WithCancel(context.WithoutCancel(ctx))
	defer stopHard()
	if err := p.startFeeds(hardCtx); err != nil {
		return nil, err
	}
	go func() {
		select {
		case <-ctx.Done():
			stopHard()
		case <-hardCtx.Done():
		}
	}()

	th := newThresholdWatch(p.s.Thresholds, p.labels, len(p.requests))
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		switch p.load.Model {
		case script.Open:
			p.runOpen(startCtx, hardCtx, start)
		default:
			p.runClosed(startCtx, hardCtx, start)
		}
	}()

	// A run bounded by iterations alone has no deadline: it ends when the budget is spent.
	var deadlineC <-chan time.Time
	if p.load.Duration > 0 {
		deadline := time.NewTimer(p.load.Duration)
		defer deadline.Stop()
		deadlineC = deadline.C
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var graceTimer <-chan time.Time
	startDone := startCtx.Done()
	second := func(now time.Time, final bool) {
		snap := p.rec.Rotate(now)
		h := p.health.rotate(now)
		sec := Second{Elapsed: now.Sub(start), Snapshot: snap, Health: h}
		// Only the health is kept: a soak test's hours of per-second histograms would fill
		// memory. OnSecond gets the snapshot to stream it.
		res.Seconds = append(res.Seconds, Second{Elapsed: sec.Elapsed, Health: h})
		if p.opts.OnSecond != nil {
			p.opts.OnSecond(sec)
		}
		if reason := th.observe(snap, now.Sub(start)); reason != "" && res.Aborted == "" && !final {
			res.Aborted = reason
			stopStarting()
			stopHard()
		}
	}
	beginGrace := func() {
		startDone = nil // fired: stop listening, or the loop would spin on it
		if graceTimer == nil {
			stopStarting()
			graceTimer = time.After(p.load.GracefulStop)
		}
	}
loop:
	for {
		select {
		case <-done:
			break loop
		case now := <-tick.C:
			second(now, false)
		case <-deadlineC:
			beginGrace()
		case <-startDone:
			beginGrace()
		case <-graceTimer:
			stopHard()
		}
	}
	wg.Wait()
	now := time.Now()
	second(now, true)
	if p.exhausted.Load() {
		res.Exhausted = p.exhaustWhy
		if res.Aborted == "" {
			p.log.Info("the run ended early: " + p.exhaustWhy)
		}
	}
	if ctx.Err() != nil && res.Aborted == "" {
		res.Aborted = "interrupted"
	}
	res.Elapsed = now.Sub(start)
	res.Total = p.rec.Total()
	res.Iterations = p.iterations.Load()
	res.Interrupted = p.interrupted.Load()
	res.Unsent = p.unsent.Load()
	p.hookMu.Lock()
	res.HookErrors = p.hookErrors
	p.hookMu.Unlock()
	for _, s := range res.Seconds {
		res.Dropped += s.Health.Dropped
	}
	healths := make([]Health, len(res.Seconds))
	for i, s := range res.Seconds {
		healths[i] = s.Health
	}
	res.Verdict = verdict(healths, runtime.GOMAXPROCS(0))
	res.Thresholds = th.final(res.Total, res.Elapsed)
	for _, t := range res.Thresholds {
		if !t.Passed {
			return res, fmt.Errorf("%w: %s", ErrThresholds, t.Threshold.Source)
		}
	}
	return res, nil
}

// stopping reports whether the run has stopped starting iterations.
func (p *plan) stopping() bool { return p.startCtx != nil && p.startCtx.Err() != nil }

// newRand returns a VU's random source, seeded apart from every other VU's.
func newRand(id int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(id)))
}

// exhaust ends the starting of iterations because a source of values ran out.
func (p *plan) exhaust(err error) {
	p.exhaustOnce.Do(func() { p.exhaustWhy = err.Error() })
	p.exhausted.Store(true)
	p.stopStarting()
}
