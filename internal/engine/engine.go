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
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/netpolicy"
	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/internal/threshold"
)

// Options adjust a run beyond what the script says.
type Options struct {
	// VUs, Duration and Rate override the script's load when not zero. Rate turns the run into
	// an open model with one constant stage of Duration (or the script's duration).
	VUs      int
	Duration time.Duration
	Rate     float64
	// Stages, when given, replace the script's load with these stages of the open model (VUs
	// is then its max VUs). They go without Rate and Duration (barrage.LoadOverrides.Validate).
	Stages []barrage.Stage
	// Sweep, a concurrency sweep's levels, is run by package sweep, a level at a time; Workload
	// tells its whole (its highest level for all its steps), which admission checks.
	Sweep *barrage.Sweep
	// Env looks up environment variables for the script's env section.
	Env func(string) (string, bool)
	// Secrets are the values of the secrets the script reads (${secret.NAME}), by name; each
	// one it reads must be here. Wherever the run could show one (traces, error samples, stop
	// reasons) it reads as Masked.
	Secrets map[string]string
	// BodyCap is how much of each response body is kept for extraction and assertions; the rest
	// is read and counted but not kept. 0 means 1 MiB.
	BodyCap int
	// Insecure skips TLS certificate verification.
	Insecure bool
	// Targets is where the load may go, checked on the address of every connection, redirects
	// included; a refused one fails as a connect error and sends nothing. Nil allows all.
	Targets *netpolicy.Policy
	// OnSecond, when set, receives every finished second while the run goes on, in order, from
	// a goroutine of its own: a slow receiver delays the delivery, never the measurement.
	OnSecond func(run.Second)
	// Trace, when set, receives every exchange of the run in full (for `barrage debug`).
	Trace func(run.TraceEvent)
	// Judge judges the script's thresholds on the run's own seconds as they come, an aborting one
	// stopping the load, and on the whole run at its end (Result.Thresholds): for a run of its
	// own. A shard of a run leaves them to the server, which judges the merged seconds.
	Judge bool
	// Log receives the engine's notices; nil discards them.
	Log *slog.Logger
	// Plugins are the element and url plugins of the script, started and configured, by alias.
	// Source plugins have already rewritten the script and are not needed.
	Plugins map[string]Plugin

	// Start is the instant the run's schedule begins, shared by every shard of a run so that
	// their ramp-ups, arrivals and seconds line up; zero means when Start is called. A start in
	// the future is waited for; one in the past (a shard that came late) begins at once on the
	// shared schedule, and Result.LateStart says how late it was.
	Start time.Time
	// Segment is this shard's share of the run; the zero Segment runs all of it.
	Segment run.Segment
	// Limits are hard limits (an agent's, a license's) that hold whatever the script says: a
	// shard that would need more VUs, or a duration past MaxRunDuration, is refused with a
	// *barrage.LimitError, and load stops at Start+MaxRunDuration, iteration-bounded runs
	// included.
	Limits barrage.Limits
}

// Run runs s to the end, judging its thresholds as it goes (an aborting one that breaks stops
// the load), and returns what it measured. The error is nil when the run completed and every
// threshold held, wraps run.ErrThresholds when one failed, and is anything else when the run could
// not happen. It is Start and Wait with a threshold.Watch, for a run that is all of its own.
func Run(ctx context.Context, s *script.Script, opts Options) (*run.Result, error) {
	opts.Judge = true
	r, err := Start(ctx, s, opts)
	if err != nil {
		return nil, err
	}
	res := r.Wait()
	return res, res.ThresholdsErr()
}

// plan is a script made ready to run.
type plan struct {
	s    *script.Script
	opts Options
	net  *network
	// scenarios are the workloads that run side by side: the script's one, or its scenarios.
	scenarios []*scenarioPlan
	load      script.Workload
	requests  []*compiledRequest
	groups    []*compiledGroup
	consts    map[string]string
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
	errSamples metrics.ErrorSamples
	labels     []metrics.Key
	rec        *metrics.Recorder
	// scheduleLabel records the open model's latency from the schedule.
	scheduleLabel int
	health        healthMeter
	log           *slog.Logger

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
	// drained is closed when the run drains (Running.Drain): no VU starts another request or
	// think time, and those in flight end as they would.
	drained chan struct{}
	// mask hides the values of the script's secrets in what the run shows; nil when none.
	mask *masker
	// scheduling counts the open scenarios whose arrivals are still due: the last to end its
	// schedule ends the start phase of a run of the open model alone.
	scheduling atomic.Int64
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
	headers []*string
	// noEncoding says what becomes of Accept-Encoding: -1 when the request has none, and
	// AcceptEncoding is sent; the index in r.Headers of the script's empty one, which is not
	// sent; len(r.Headers) when the script sets its own.
	noEncoding int
	// boundary is a multipart body's, one for the run.
	boundary string
	// wsConnect and wsReceive are a WebSocket session's labels: its upgrade's, and each
	// receive step's (by step; -1 for a send).
	wsConnect int
	wsReceive []int
	// checks are the labels that tally r's assertions (by assertion; -1 for the implied status
	// check), and wsChecks each WebSocket step's (by step, then assertion).
	checks   []int
	wsChecks [][]int
	// needBody: an extractor, assertion or plugin reads the body, which is then decoded.
	needBody    bool
	needsJSON   bool
	needHeader  bool
	needCookies bool
	// runsAfter: a url plugin of the request has something to do after the response.
	runsAfter bool
	// static means every send of the request is the same bytes: literal URL, headers and body,
	// and no cookie jar to consult. The first VU to send it builds it, in prepared, for all: an
	// idle VU holds no copy of its own (1.3 KB each, measured by BenchmarkIdleVU).
	static   bool
	prepared atomic.Pointer[preparedRequest]
}

// compile plans a run of s with opts: its values and data, its network, the shard's share of
// its workload, its plugins, and each request compiled with the labels its metrics go to.
func compile(s *script.Script, opts Options) (*plan, error) {
	p, err := newPlan(s, opts)
	if err != nil {
		return nil, err
	}
	if err := p.compileRequests(); err != nil {
		return nil, err
	}
	p.labelWebSockets()
	for _, cg := range p.groups {
		cg.label = p.label(metrics.GroupKey(cg.g.Name))
	}
	for _, cr := range p.requests {
		cr.checks = p.checkLabels(cr.r.Name, cr.r.Assert)
		if ws := cr.r.WebSocket; ws != nil {
			for _, st := range ws.Steps {
				cr.wsChecks = append(cr.wsChecks, p.checkLabels(st.Name, st.Assert))
			}
		}
	}
	p.scheduleLabel = p.label(metrics.ScheduleKey)
	for i, sc := range p.scenarioScripts() {
		for _, cg := range p.groups {
			if slices.Contains(sc.Session.Groups, cg.g) {
				p.scenarios[i].groups = append(p.scenarios[i].groups, cg)
			}
		}
	}
	p.hookLabels()
	return p, nil
}

// newPlan is the plan of s with opts before its requests are compiled: the script's values
// (environment, constants, secrets, masked wherever the run could show them), its data, its
// base URL, its network, the shard's share of the workload within the hard limits, its plugins.
func newPlan(s *script.Script, opts Options) (*plan, error) {
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
	values, err := secrets(s, opts.Secrets, p.consts)
	if err != nil {
		return nil, err
	}
	if p.mask = newMasker(values); p.mask != nil && opts.Trace != nil {
		trace, mask := opts.Trace, p.mask
		p.opts.Trace = func(ev run.TraceEvent) { trace(mask.event(ev)) }
	}
	for _, df := range s.Variables.Data {
		if df.Rows == nil {
			return nil, fmt.Errorf("data file %s was not loaded", df.File)
		}
		p.data = append(p.data, &dataSource{df: df, seg: opts.Segment})
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
	if p.net, err = newNetwork(s, opts); err != nil {
		return nil, err
	}
	if err := run.CheckScenarioOverrides(s, opts.Overrides()); err != nil {
		return nil, err
	}
	p.load = run.Workload(s, opts.Overrides())
	p.planScenarios()
	if err := p.shard(); err != nil {
		return nil, err
	}
	return p, p.compilePlugins()
}

// label adds a label that metrics are kept under and returns its index.
func (p *plan) label(key metrics.Key) int {
	p.labels = append(p.labels, key)
	return len(p.labels) - 1
}

// compileRequests compiles every group's requests, each with its label, in session order.
func (p *plan) compileRequests() error {
	cookies := map[*script.Group]bool{}
	for _, sc := range p.scenarioScripts() {
		for _, g := range sc.Session.Groups {
			cookies[g] = sc.Session.Cookies
		}
	}
	for _, g := range p.s.Session.Groups {
		cg := &compiledGroup{g: g}
		for _, r := range g.Requests {
			cr, err := p.compileRequest(r, cookies[g])
			if err != nil {
				return err
			}
			cg.requests = append(cg.requests, cr)
			p.requests = append(p.requests, cr)
		}
		p.groups = append(p.groups, cg)
	}
	return nil
}

// compileRequest compiles r, of a group whose VUs keep cookies when jar: what of it is literal
// (parsed or rendered once), whether every send is the same bytes, and what of its response
// it must read.
func (p *plan) compileRequest(r *script.Request, jar bool) (*compiledRequest, error) {
	key := metrics.RequestKey(r.Name)
	if r.WebSocket != nil {
		key = metrics.StepKey(r.Name) // the session; its upgrade is the request
	}
	cr := &compiledRequest{r: r, label: p.label(key), noEncoding: -1}
	if lit, ok := r.URL.Literal(); ok && len(r.Query) == 0 {
		u, err := url.Parse(lit)
		if err != nil {
			return nil, fmt.Errorf("request %s: url: %w", r.Name, err)
		}
		cr.url, cr.rawURL = u, u.String()
	}
	cr.literalHeaders()
	cr.static = cr.url != nil && !jar && !r.HTTP2 && r.Redirects == 0 && len(r.Plugins) == 0
	for _, lit := range cr.headers {
		cr.static = cr.static && lit != nil
	}
	if isStreamed(r.Body) {
		if err := fileBodyNotLoaded(r); err != nil {
			return nil, err
		}
		cr.static = false
		if r.Body.Kind == script.MultipartBody {
			cr.boundary = newBoundary()
		}
	} else if r.Body != nil {
		_, lit := r.Body.Content.Literal()
		cr.static = cr.static && lit
	}
	// A url plugin that runs after the response reads its headers.
	cr.runsAfter = p.runsAfter(r)
	cr.needHeader, cr.needBody = cr.runsAfter, cr.runsAfter
	cr.readsOfResponse()
	return cr, nil
}

// literalHeaders renders once each header whose value is a literal, and notes what becomes of
// Accept-Encoding (compiledRequest.noEncoding).
func (cr *compiledRequest) literalHeaders() {
	for i, h := range cr.r.Headers {
		var lit *string
		if v, ok := h.Value.Literal(); ok {
			lit = &v
		}
		cr.headers = append(cr.headers, lit)
		if strings.EqualFold(h.Name, "Accept-Encoding") {
			// The script's own; an empty one means none is sent. (A template that renders
			// empty sends an empty one: the script asked for that header.)
			cr.noEncoding = len(cr.r.Headers)
			if lit != nil && *lit == "" {
				cr.noEncoding = i
			}
		}
	}
}

// readsOfResponse notes what of the response the request's extractors and assertions read:
// its body (decoded as JSON or not), its headers, its cookies.
func (cr *compiledRequest) readsOfResponse() {
	for _, x := range cr.r.Extract {
		cr.needBody = cr.needBody || x.Kind == script.ExtractJSON || x.Kind == script.ExtractRegex
		cr.needsJSON = cr.needsJSON || x.Kind == script.ExtractJSON
		cr.needHeader = cr.needHeader || x.Kind == script.ExtractHeader
		cr.needCookies = cr.needCookies || x.Kind == script.ExtractCookie
	}
	for _, a := range cr.r.Assert {
		cr.needBody = cr.needBody || a.Kind == script.AssertJSON || a.Kind == script.AssertBodyContains || a.Kind == script.AssertBodyMatches
		cr.needsJSON = cr.needsJSON || a.Kind == script.AssertJSON
	}
}

// labelWebSockets adds the labels of each WebSocket session's upgrade and receive steps, after
// every request's: requests' labels come first.
func (p *plan) labelWebSockets() {
	for _, cr := range p.requests {
		ws := cr.r.WebSocket
		if ws == nil {
			continue
		}
		cr.static = false
		cr.wsConnect = p.label(metrics.RequestKey(ws.Connect))
		for _, st := range ws.Steps {
			i := -1
			if st.Send == nil {
				i = p.label(metrics.StepKey(st.Name))
			}
			cr.wsReceive = append(cr.wsReceive, i)
		}
	}
}

// checkLabels adds the labels that tally the assertions of a request (or WebSocket step) and
// returns them, by assertion: -1 for the implied status check, which is not tallied
// (script.Session.Checks).
func (p *plan) checkLabels(request string, as []*script.Assertion) []int {
	out := make([]int, len(as))
	for i, a := range as {
		out[i] = -1
		if !a.Implied {
			out[i] = p.label(metrics.CheckKey(script.Check{Request: request, Name: a.Name}.Label()))
		}
	}
	return out
}

// shard takes the segment's share of each scenario's workload and checks them together against
// the hard limits.
func (p *plan) shard() error {
	seg := p.opts.Segment
	if err := seg.Validate(); err != nil {
		return barrage.Invalid("segment", err.Error())
	}
	vus := 0
	for _, sc := range p.scenarios {
		w := &sc.load
		if w.Model == script.Open {
			// Every shard may need a VU, however few the segment owns of max_vus.
			w.MaxVUs = max(int(seg.Scale(int64(w.MaxVUs))), 1)
			vus += w.MaxVUs
		} else {
			vus += int(seg.Scale(int64(w.VUs)))
		}
	}
	if len(p.s.Scenarios) == 0 {
		p.load = p.scenarios[0].load
	}
	return p.opts.Limits.Check(barrage.Load{VUs: vus, Duration: p.load.Duration})
}

// LoadOptions are the options that change a script's load as o says.
func LoadOptions(o barrage.LoadOverrides) Options {
	return Options{VUs: o.VUs, Duration: o.Duration, Rate: o.Rate, Stages: o.Stages, Sweep: o.Sweep}
}

// Overrides are the options that change the script's load, as a run's load overrides.
func (o Options) Overrides() barrage.LoadOverrides {
	return barrage.LoadOverrides{VUs: o.VUs, Duration: o.Duration, Rate: o.Rate, Stages: o.Stages, Sweep: o.Sweep}
}

// Running is a run under way: Start returns it, Stop cuts it short, Wait collects its Result.
type Running struct {
	p    *plan
	res  *run.Result
	done chan struct{}
	// watch judges the thresholds as the seconds come, with Options.Judge; Wait judges them on
	// the whole run, once.
	watch  *threshold.Watch
	judged sync.Once

	stopMu sync.Mutex
	stop   *run.Stop     // the first reason given, nil while none was
	hard   func()        // cuts running iterations short
	cut    chan struct{} // closed by the first Stop
	isCut  bool
	// drain is closed by the first Drain, which waits drainFor at most for requests in flight.
	drain    chan struct{}
	draining bool
	drainFor time.Duration
}

// Start begins s in the background and returns at once: the schedule starts at opts.Start (now
// when zero), seconds go to opts.OnSecond as they end, and Wait returns the Result once load has
// stopped and every second has been delivered. Thresholds are judged only with opts.Judge: a
// shard's own seconds are only its share, so the server judges the merged ones and stops the
// shards when one breaks. Run does all of it for a run of its own.
//
// Cancelling ctx stops the run as Stop(Canceled, "interrupted") would.
func Start(ctx context.Context, s *script.Script, opts Options) (*Running, error) {
	p, err := compile(s, opts)
	if err != nil {
		return nil, err
	}
	if !opts.Judge {
		return p.start(ctx, nil)
	}
	watch := threshold.New(s.Thresholds)
	r, err := p.start(ctx, func(r *Running, sec run.Second) {
		if why := watch.Observe(sec.Snapshot, sec.Elapsed); why != "" {
			r.Stop(run.AbortedThreshold, why)
		}
	})
	if r != nil {
		r.watch = watch
	}
	return r, err
}

// Stop cuts the run short: no iteration starts after it, and those running are interrupted at
// once, their open requests included. The first reason given is the one the Result keeps; a
// Stop after the run ended does nothing.
func (r *Running) Stop(reason run.StopReason, detail string) {
	r.stopMu.Lock()
	defer r.stopMu.Unlock()
	if r.stop == nil {
		r.stop = &run.Stop{Reason: reason, Detail: detail}
	}
	if !r.isCut { // a Stop during a Drain cuts what the drain waits for
		r.isCut = true
		close(r.cut)
	}
}

// Drain stops the run at the requests' edge: no iteration, request or think time starts after
// it, and the requests in flight end as they would, for within at most, after which they are cut
// as Stop cuts them. Every request the target saw is then measured and counted: an agent told
// to stop (its run canceled, its process terminated) loses nothing of what it sent. The first
// reason given, by Drain or Stop, is the one the Result keeps.
func (r *Running) Drain(reason run.StopReason, detail string, within time.Duration) {
	r.stopMu.Lock()
	defer r.stopMu.Unlock()
	if r.stop == nil {
		r.stop = &run.Stop{Reason: reason, Detail: detail}
	}
	if !r.draining && !r.isCut {
		r.draining, r.drainFor = true, within
		close(r.drain)
	}
}

// Done is closed when the run has ended and its Result is ready.
func (r *Running) Done() <-chan struct{} { return r.done }

// Wait blocks until the run has ended and every second has been delivered, and returns what it
// measured.
func (r *Running) Wait() *run.Result {
	<-r.done
	if r.watch != nil {
		r.judged.Do(func() { r.res.Thresholds = r.watch.Final(r.res.Total, r.res.Elapsed) })
	}
	return r.res
}

// start launches the run; onSecond, when set, sees each second after Options.OnSecond, on the
// same goroutine.
func (p *plan) start(ctx context.Context, onSecond func(*Running, run.Second)) (*Running, error) {
	now := time.Now()
	start := p.opts.Start
	if start.IsZero() {
		start = now
	}
	r := &Running{p: p, done: make(chan struct{}), cut: make(chan struct{}), drain: make(chan struct{})}
	p.drained = make(chan struct{})
	r.res = &run.Result{Script: p.s.Name, Model: p.load.Model, Start: start, Segment: p.opts.Segment, Hooks: p.hooks}
	r.res.Requests = p.s.Session.RequestLabels()
	r.res.Checks = p.s.Session.Checks()
	for _, g := range p.groups {
		r.res.Groups = append(r.res.Groups, g.g.Name)
	}

	// hardCtx ends when running iterations are cut short (graceful stop over, Stop, ctx gone),
	// and with it the element plugins' feeds.
	hardCtx, stopHard := context.WithCancel(context.WithoutCancel(ctx))
	r.hard = stopHard
	if err := p.startFeeds(hardCtx); err != nil {
		stopHard()
		return nil, err
	}
	out := newDelivery(func(sec run.Second) {
		if p.opts.OnSecond != nil {
			p.opts.OnSecond(sec)
		}
		if onSecond != nil {
			onSecond(r, sec)
		}
	})
	go func() {
		select {
		case <-ctx.Done():
			r.Stop(run.Canceled, "interrupted")
		case <-hardCtx.Done():
		}
	}()
	go func() {
		defer close(r.done)
		defer stopHard()
		p.run(r, ctx, hardCtx, start, out)
		out.close()
	}()
	return r, nil
}

// run generates the load from start until it ends or is stopped, streaming its seconds to out,
// and fills r.res.
func (p *plan) run(r *Running, ctx, hardCtx context.Context, start time.Time, out *delivery) {
	res := r.res
	// startCtx ends when no new iteration may start (duration reached, Stop, data exhausted).
	startCtx, stopStarting := context.WithCancel(hardCtx)
	defer stopStarting()
	p.stopStarting, p.startCtx = stopStarting, startCtx

	// A schedule that starts later is waited for; one that started already is joined late.
	begun := time.Now()
	if wait := start.Sub(begun); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case begun = <-t.C:
		case <-r.cut:
			t.Stop()
		}
	} else {
		res.LateStart = -wait
	}
	p.rec = metrics.NewRecorder(p.labels, begun)
	p.health.rotate(begun)

	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-r.cut:
			return // stopped before it began
		default:
		}
		var wg sync.WaitGroup
		for _, sc := range p.scenarios {
			if sc.load.Model == script.Open {
				p.scheduling.Add(1)
			}
		}
		for _, sc := range p.scenarios {
			wg.Go(func() {
				sctx := startCtx
				if sc.load.Model != script.Open && sc.load.Duration > 0 && len(p.scenarios) > 1 {
					// Scenarios end each at its own duration; the run at the longest.
					var cancel context.CancelFunc
					sctx, cancel = context.WithDeadline(startCtx, start.Add(sc.load.Duration))
					defer cancel()
				}
				switch sc.load.Model {
				case script.Open:
					p.runOpen(sc, sctx, hardCtx, start)
				default:
					p.runClosed(sc, sctx, hardCtx, start)
				}
			})
		}
		wg.Wait()
	}()

	// A run bounded by iterations alone has no deadline of its own: it ends when the budget is
	// spent, or at the hard limit. The open model ends its schedule itself, so that an arrival
	// due at the very end is sent rather than raced by a timer.
	var deadlineC, limitC <-chan time.Time
	if p.load.Duration > 0 && p.load.Model != script.Open {
		deadline := time.NewTimer(time.Until(start.Add(p.load.Duration)))
		defer deadline.Stop()
		deadlineC = deadline.C
	}
	if max := p.opts.Limits.MaxRunDuration; max > 0 {
		limit := time.NewTimer(time.Until(start.Add(max)))
		defer limit.Stop()
		limitC = limit.C
	}
	// Seconds end on the shared schedule's boundaries, so that shards' seconds line up; a
	// shard that joins late begins in the schedule's current second.
	index := int64(res.LateStart / time.Second)
	tick := time.NewTimer(time.Until(start.Add(time.Duration(index+1) * time.Second)))
	defer tick.Stop()
	second := func(now time.Time) {
		snap := p.rec.Rotate(now)
		h := p.health.rotate(now)
		sec := run.Second{Index: index, Elapsed: now.Sub(start), Snapshot: snap, Health: h}
		index++
		// Only the health is kept: a soak test's hours of per-second histograms would fill
		// memory. OnSecond gets the snapshot to stream it.
		res.Seconds = append(res.Seconds, run.Second{Index: sec.Index, Elapsed: sec.Elapsed, Health: h})
		out.send(sec)
	}
	var graceTimer, drainTimer <-chan time.Time
	startDone, cut, drain := startCtx.Done(), r.cut, r.drain
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
			second(now)
			tick.Reset(time.Until(start.Add(time.Duration(index+1) * time.Second)))
		case <-deadlineC:
			beginGrace()
		case <-startDone:
			beginGrace()
		case <-graceTimer:
			r.hard()
		case <-cut:
			cut = nil
			stopStarting()
			r.hard()
		case <-drain:
			drain = nil
			stopStarting()
			close(p.drained)
			r.stopMu.Lock()
			drainTimer = time.After(r.drainFor)
			r.stopMu.Unlock()
		case <-drainTimer:
			r.hard()
		case <-limitC:
			// The limit fires with the script's own end when the script lasts as long as the
			// limit allows (both timers at one instant): then the script ended the run.
			if ends := p.load.Duration; graceTimer == nil && (ends <= 0 || ends > p.opts.Limits.MaxRunDuration) {
				// Still due to start iterations: the limit, not the script, ended the run.
				r.Stop(run.TimedOut, fmt.Sprintf("the run reached its limit of %s", p.opts.Limits.MaxRunDuration))
			}
			r.hard()
		}
	}
	now := time.Now()
	second(now)
	r.stopMu.Lock()
	if r.stop != nil {
		res.Stop = *r.stop
	}
	r.stopMu.Unlock()
	if p.exhausted.Load() {
		res.Exhausted = p.exhaustWhy
		if res.Stop.Reason == run.Completed {
			res.Stop.Detail = p.exhaustWhy
			p.log.Info("the run ended early: " + p.exhaustWhy)
		}
	}
	res.Elapsed = now.Sub(start)
	res.Total = p.rec.Total()
	res.Iterations = p.iterations.Load()
	res.Interrupted = p.interrupted.Load()
	res.Unsent = p.unsent.Load()
	p.hookMu.Lock()
	res.HookErrors = p.hookErrors
	p.hookMu.Unlock()
	res.ErrorSamples = p.mask.samples(p.errSamples.List())
	res.Stop.Detail = p.mask.string(res.Stop.Detail) // Exhausted was masked by exhaust
	res.Scenarios = p.scenarioResults()
	healths := make([]run.Health, len(res.Seconds))
	for i, s := range res.Seconds {
		res.Dropped += s.Health.Dropped
		healths[i] = s.Health
	}
	res.Verdict = run.Judge(healths)
}

// delivery hands seconds to a receiver on a goroutine of its own, in order, queueing as many as
// the receiver falls behind: the run loop never waits for it.
type delivery struct {
	mu      sync.Mutex
	queue   []run.Second
	closed  bool
	wake    chan struct{}
	drained chan struct{}
}

func newDelivery(receive func(run.Second)) *delivery {
	d := &delivery{wake: make(chan struct{}, 1), drained: make(chan struct{})}
	go func() {
		defer close(d.drained)
		for range d.wake {
			for {
				d.mu.Lock()
				batch, closed := d.queue, d.closed
				d.queue = nil
				d.mu.Unlock()
				for _, sec := range batch {
					receive(sec)
				}
				if len(batch) == 0 {
					if closed {
						return
					}
					break
				}
			}
		}
	}()
	return d
}

func (d *delivery) send(sec run.Second) {
	d.mu.Lock()
	d.queue = append(d.queue, sec)
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// close delivers what is queued and returns when the receiver has had it all.
func (d *delivery) close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
	<-d.drained
}

// stopping reports whether the run has stopped starting iterations.
func (p *plan) stopping() bool { return p.startCtx != nil && p.startCtx.Err() != nil }

// draining reports whether the run drains: no request or think time may start.
func (p *plan) draining() bool {
	if p.drained == nil { // a debug's one iteration
		return false
	}
	select {
	case <-p.drained:
		return true
	default:
		return false
	}
}

// errDrained ends an iteration at a request's edge when the run drains.
var errDrained = errors.New("the run drains")

// newRand returns a VU's random source, seeded apart from every other VU's.
func newRand(id int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(id)))
}

// exhaust ends the starting of iterations because a source of values ran out.
func (p *plan) exhaust(err error) {
	p.exhaustOnce.Do(func() { p.exhaustWhy = p.mask.string(err.Error()) })
	p.exhausted.Store(true)
	if p.stopStarting != nil { // nil in a debug's one iteration
		p.stopStarting()
	}
}
