package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/sdk"
)

// Plugin is a started, configured plugin a script uses, by the alias (script.Plugin.As) in
// Options.Plugins. The engine only calls hooks: starting processes, checking configs and
// configuring belong to the caller.
type Plugin struct {
	// Element produces an element plugin's variables; Scope says how often they change (the
	// script's scope, else the plugin's own).
	Element sdk.SessionElement
	Scope   script.Scope
	// URL is a url plugin's hook in each of its processes. A VU always calls the same one, so a
	// plugin keeping state per VU sees all of that VU's calls.
	URL []sdk.URLHook
}

// previewSize is how much of a response body a url plugin's After sees.
const previewSize = 4096

// elementFeed keeps values of an element plugin ready ahead of the VUs that use them: one
// call into the plugin serves many iterations.
type elementFeed struct {
	alias string
	el    sdk.SessionElement
	scope script.Scope
	batch int

	ch  chan sdk.Vars
	err error // why the feed ended early, if it did; read after ch is closed
	run sdk.Vars
}

func newElementFeed(alias string, pl Plugin, vus int) *elementFeed {
	batch := min(max(vus, 16), 500)
	return &elementFeed{alias: alias, el: pl.Element, scope: pl.Scope, batch: batch, ch: make(chan sdk.Vars, 2*batch)}
}

// start fetches the run-scoped values, or starts prefetching.
func (f *elementFeed) start(ctx context.Context) error {
	if f.scope == script.ScopeRun {
		sets, err := f.el.Next(ctx, 1)
		if len(sets) == 0 {
			if err == nil || errors.Is(err, sdk.ErrExhausted) {
				err = errors.New("produced no values")
			}
			return fmt.Errorf("plugin %s: %w", f.alias, err)
		}
		f.run = sets[0]
		return nil
	}
	go f.fill(ctx)
	return nil
}

func (f *elementFeed) fill(ctx context.Context) {
	defer close(f.ch)
	idle := time.Millisecond
	for ctx.Err() == nil {
		sets, err := f.el.Next(ctx, f.batch)
		if len(sets) == 0 && err == nil {
			// Nothing yet, and not exhausted: ask again, less often each time, rather than spin.
			select {
			case <-time.After(idle):
			case <-ctx.Done():
				return
			}
			idle = min(2*idle, time.Second)
			continue
		}
		idle = time.Millisecond
		for _, s := range sets {
			select {
			case f.ch <- s:
			case <-ctx.Done():
				return
			}
		}
		switch {
		case errors.Is(err, sdk.ErrExhausted):
			return
		case err != nil:
			if ctx.Err() == nil {
				f.err = err
			}
			return
		}
	}
}

// next returns a fresh set of values, or errExhausted (wrapping the plugin's failure, if any)
// when there are no more.
func (f *elementFeed) next(ctx context.Context) (sdk.Vars, error) {
	if f.scope == script.ScopeRun {
		return f.run, nil
	}
	select {
	case v, ok := <-f.ch:
		if ok {
			return v, nil
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if f.err != nil {
		return nil, fmt.Errorf("%w: plugin %s: %v", errExhausted, f.alias, f.err)
	}
	return nil, fmt.Errorf("%w: plugin %s has no more values", errExhausted, f.alias)
}

// setVars stores a plugin's values under alias.name.
func setVars(dst map[string]string, alias string, vars sdk.Vars) {
	for k, v := range vars {
		dst[alias+"."+k] = v
	}
}

// compilePlugins checks that every plugin of the script was given, and prepares the feeds of
// element plugins and the hook labels of url plugins.
func (p *plan) compilePlugins() error {
	for _, sp := range p.s.Plugins {
		pl, ok := p.opts.Plugins[sp.As]
		switch {
		case sp.Kind == script.SourcePlugin:
			continue // already applied to the script
		case !ok:
			return fmt.Errorf("plugin %s (%s) was not started", sp.As, sp.Ref)
		case sp.Kind == script.ElementPlugin && pl.Element == nil:
			return fmt.Errorf("plugin %s (%s) is not a session element", sp.As, sp.Ref)
		case sp.Kind == script.URLPlugin && len(pl.URL) == 0:
			return fmt.Errorf("plugin %s (%s) is not a url plugin", sp.As, sp.Ref)
		}
		switch sp.Kind {
		case script.ElementPlugin:
			if pl.Scope == 0 {
				pl.Scope = script.ScopeVU
			}
			p.feeds = append(p.feeds, newElementFeed(sp.As, pl, max(p.load.VUs, p.load.MaxVUs)))
		case script.URLPlugin:
			p.hooks = append(p.hooks, sp.As) // labelled after the groups, by hookLabels
		}
	}
	return nil
}

// hookLabels appends the labels of url plugins' hook times, in alias order.
func (p *plan) hookLabels() {
	sort.Strings(p.hooks)
	p.hookLabel = make(map[string]int, len(p.hooks))
	for _, a := range p.hooks {
		p.hookLabel[a] = len(p.labels)
		p.labels = append(p.labels, metrics.HookKey(a))
	}
}

// startFeeds starts every element plugin's feed.
func (p *plan) startFeeds(ctx context.Context) error {
	for _, f := range p.feeds {
		if err := f.start(ctx); err != nil {
			return err
		}
	}
	return nil
}

// elementValues sets the values of the element plugins of scope into the VU's plugin
// variables.
func (v *vu) elementValues(ctx context.Context, scope script.Scope) error {
	for _, f := range v.p.feeds {
		if f.scope != scope && !(scope == script.ScopeVU && f.scope == script.ScopeRun) {
			continue
		}
		vals, err := f.next(ctx)
		if err != nil {
			return err
		}
		setVars(v.pluginVars, f.alias, vals)
	}
	return nil
}

// hookCall is the Call a url plugin sees for request r.
func (v *vu) hookCall(r *compiledRequest) sdk.Call {
	return sdk.Call{VU: v.id + 1, Iteration: v.iter, Request: r.r.Name}
}

// before runs the request's url plugins on the prepared exchange and returns the request they
// saw, to hand to after. Time in hooks is recorded under each plugin's label.
func (v *vu) before(ctx context.Context, r *compiledRequest, ex *exchange) (*sdk.Request, error) {
	if v.hookHeader == nil {
		v.hookHeader = make(http.Header, len(ex.header)+1)
	}
	clear(v.hookHeader)
	req := &v.hookReq
	*req = sdk.Request{Method: ex.method, URL: ex.rawURL, Header: v.hookHeader, Body: ex.body}
	for _, h := range ex.header {
		req.Header.Add(h[0], h[1])
	}
	call := v.hookCall(r)
	for _, sp := range r.r.Plugins {
		hooks := v.p.opts.Plugins[sp.As].URL
		start := time.Now()
		err := hooks[v.id%len(hooks)].Before(ctx, call, req)
		if ctx.Err() != nil {
			return nil, ctx.Err() // the run ended: neither the hook's failure nor a measurement
		}
		v.recordHook(sp.As, time.Since(start), err)
		if err != nil {
			return nil, err
		}
	}
	if req.URL != ex.rawURL {
		u, err := url.Parse(req.URL)
		if err != nil || !u.IsAbs() {
			return nil, fmt.Errorf("a url plugin set the url %q, which is not absolute", req.URL)
		}
		ex.url, ex.rawURL = u, req.URL
	}
	ex.method, ex.body, ex.prepared = req.Method, req.Body, nil
	ex.header = ex.header[:0]
	keys := v.hookKeys[:0]
	for k := range req.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, val := range req.Header[k] {
			ex.header = append(ex.header, [2]string{k, val})
		}
	}
	v.hookKeys = keys
	return req, nil
}

// after runs the request's url plugins on the response. It returns the reasons the plugins
// failed the request for; variables they set go into the VU's plugin variables.
func (v *vu) after(ctx context.Context, r *compiledRequest, req *sdk.Request, rep *reply, took time.Duration) []string {
	resp := &sdk.Response{Status: rep.status, Header: rep.header, BodyPreview: rep.body[:min(len(rep.body), previewSize)], Duration: took}
	if resp.Header == nil {
		resp.Header = http.Header{}
	}
	call := v.hookCall(r)
	var failures []string
	for _, sp := range r.r.Plugins {
		hooks := v.p.opts.Plugins[sp.As].URL
		hook := hooks[v.id%len(hooks)]
		if skipsAfter(hook) {
			continue // nothing to do after responses: no call, no time
		}
		start := time.Now()
		out, err := hook.After(ctx, call, req, resp)
		if ctx.Err() != nil {
			return nil // the run ended; request sees it and records nothing
		}
		v.recordHook(sp.As, time.Since(start), err)
		switch {
		case err != nil:
			failures = append(failures, err.Error())
		case out.Fail != "":
			failures = append(failures, fmt.Sprintf("plugin %s: %s", sp.As, out.Fail))
		}
		setVars(v.vars, sp.As, out.Vars) // like extracted values: for the rest of the iteration
	}
	return failures
}

// runsAfter says whether a url plugin of r has something to do after its response.
func (p *plan) runsAfter(r *script.Request) bool {
	for _, sp := range r.Plugins {
		for _, hook := range p.opts.Plugins[sp.As].URL {
			if !skipsAfter(hook) {
				return true
			}
		}
	}
	return false
}

func skipsAfter(hook sdk.URLHook) bool {
	s, ok := hook.(sdk.AfterSkipper)
	return ok && s.SkipAfter()
}

func (v *vu) recordHook(alias string, took time.Duration, err error) {
	class := metrics.NoError
	if err != nil {
		class = metrics.ErrAssertion
		v.p.hookFailed(err)
	}
	v.p.rec.Label(v.p.hookLabel[alias]).Record(took, 0, 0, class)
}

// hookFailed counts a failed hook call by its reason, for the result.
func (p *plan) hookFailed(err error) {
	p.hookMu.Lock()
	defer p.hookMu.Unlock()
	if p.hookErrors == nil {
		p.hookErrors = make(map[string]int64)
	}
	msg := err.Error()
	if len(p.hookErrors) >= 20 {
		msg = "other hook failures"
	}
	p.hookErrors[strings.TrimSpace(msg)]++
}
