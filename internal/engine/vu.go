package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/netpolicy"
	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/sdk"
)

// vu is one virtual user: its connections, cookies, variables and random source.
type vu struct {
	id   int
	p    *plan
	sc   *scenarioPlan // the workload whose groups it runs
	t    *transport
	rng  *rand.Rand
	jar  *cookiejar.Jar
	vars map[string]string // extracted (and set by url plugins) in this iteration
	row  map[string]string // the data rows of this iteration
	// pluginVars are element plugins' values, as alias.name; vuValues says whether those of
	// the VU's scope were fetched.
	pluginVars map[string]string
	vuValues   bool
	iter       int64     // iterations started, from 1
	busyFrom   time.Time // since when the iteration has been busy (not thinking)
	lookup     script.Lookup

	urlBuf, bodyBuf, valBuf []byte
	header                  [][2]string
	// stream is the VU's file or multipart body in flight, and segs and segFiles its pieces.
	stream   bodyStream
	segs     [][]byte
	segFiles []string
	ex       exchange
	rep      reply
	stopCut  func() bool
	hardCtx  context.Context // what ends the VU's requests
	// helpers send the VU's batches beside it, each with connections of its own.
	helpers []*vu
	// hookReq is the request url plugins see, and hookHeader and hookKeys its headers and
	// their names: reused from request to request, as the VU's other buffers are.
	hookReq    sdk.Request
	hookHeader http.Header
	hookKeys   []string
}

func (p *plan) newVU(sc *scenarioPlan, id int, hardCtx context.Context) *vu {
	v := p.newVUOnly(sc, id, hardCtx)
	v.lookup = func(name string) (string, bool) {
		if s, ok := v.vars[name]; ok {
			return s, true
		}
		return v.lookupShared(name)
	}
	return v
}

// lookupShared finds a variable among the iteration's data rows, the plugins' values and the
// constants: what a VU's batch helpers share with it.
func (v *vu) lookupShared(name string) (string, bool) {
	if s, ok := v.row[name]; ok {
		return s, true
	}
	if s, ok := v.pluginVars[name]; ok {
		return s, true
	}
	s, ok := v.p.consts[name]
	return s, ok
}

// newVUOnly is a VU without its lookup.
func (p *plan) newVUOnly(sc *scenarioPlan, id int, hardCtx context.Context) *vu {
	var local []byte
	if addrs := sc.load.SourceAddrs; len(addrs) > 0 {
		local = addrs[id%len(addrs)].AsSlice()
	}
	keepHeader, keepCookies := p.opts.Trace != nil, sc.cookies
	for _, g := range sc.groups {
		for _, r := range g.requests {
			keepHeader = keepHeader || r.needHeader
			keepCookies = keepCookies || r.needCookies
		}
	}
	id += sc.vuBase
	v := &vu{
		id:   id,
		p:    p,
		sc:   sc,
		t:    newTransport(local, p.net, p.opts.BodyCap, keepHeader, keepCookies, p.opts.Targets),
		rng:  newRand(id),
		vars: make(map[string]string),
		row:  make(map[string]string),
	}
	v.t.traceRedirects = p.opts.Trace != nil
	if len(p.feeds) > 0 {
		v.pluginVars = make(map[string]string)
	}
	// When the run is over, cut the VU's connections: fasthttp knows only per-request
	// deadlines, and a hanging target must not hold the run past its graceful stop.
	v.stopCut = context.AfterFunc(hardCtx, v.t.cutAll)
	v.hardCtx = hardCtx
	return v
}

func (v *vu) close() {
	v.stopCut()
	v.t.close()
	for _, h := range v.helpers {
		h.close()
	}
}

// batchParallel is how many requests of a batch go at once: the connections a browser opens to
// one host.
const batchParallel = 6

// batch sends reqs at once, at most batchParallel at a time, each from a helper of the VU with
// its own connections and the VU's cookies and variables; what they extract joins the VU's
// variables once all are done. It returns the first failure's class and the bytes of all. A debug
// sends them one after the other, so that its trace reads in order.
func (v *vu) batch(ctx context.Context, reqs []*compiledRequest, measureFrom time.Time) (metrics.ErrorClass, int64, int64) {
	n := min(len(reqs), batchParallel)
	if v.p.opts.Trace != nil {
		n = 1
	}
	for len(v.helpers) < n {
		h := v.p.newVUOnly(v.sc, v.id-v.sc.vuBase, v.hardCtx)
		h.lookup = func(name string) (string, bool) {
			if s, ok := h.vars[name]; ok {
				return s, true
			}
			if s, ok := v.vars[name]; ok { // read only while the batch runs
				return s, true
			}
			return v.lookupShared(name)
		}
		v.helpers = append(v.helpers, h)
	}
	type result struct {
		class   metrics.ErrorClass
		in, out int64
	}
	results := make([]result, len(reqs))
	next := make(chan int, len(reqs))
	for i := range reqs {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for _, h := range v.helpers[:n] {
		clear(h.vars)
		h.jar, h.row, h.pluginVars = v.jar, v.row, v.pluginVars
		wg.Go(func() {
			for i := range next {
				from := time.Time{}
				if i == 0 { // the iteration's first request measures it from its due time
					from = measureFrom
				}
				c, in, out := h.request(ctx, reqs[i], from)
				results[i] = result{c, in, out}
			}
		})
	}
	wg.Wait()
	class := metrics.NoError
	var in, out int64
	for _, r := range results {
		if class == metrics.NoError {
			class = r.class
		}
		in, out = in+r.in, out+r.out
	}
	for _, h := range v.helpers[:n] {
		maps.Copy(v.vars, h.vars)
	}
	return class, in, out
}

// errExhausted means a sequential data file has no row left for another iteration.
var errExhausted = errors.New("data exhausted")

// iteration runs the session once. measureFrom is when the iteration was due to start, in the
// open model: its first request's latency from the schedule (from then to the request's end,
// whatever made it late) is recorded apart from its response time (from its send), which is the
// target's alone: an arrival never waits for a VU (it is dropped when none is free), so what
// lies between the due time and the send is the generator's own lateness. ctx cuts it short.
func (v *vu) iteration(ctx context.Context, measureFrom time.Time) error {
	// The VU's busy time is counted as it goes, think times left out (think pauses it).
	v.busyFrom = time.Now()
	defer func() { v.p.health.busyTime.Add(int64(time.Since(v.busyFrom))) }()
	if len(v.vars) > 0 { // clearing even an empty map walks its table
		clear(v.vars)
	}
	v.iter++
	for _, d := range v.p.data {
		if err := d.next(v.rng, v.row); err != nil {
			return err
		}
	}
	if len(v.p.feeds) > 0 {
		if !v.vuValues {
			if err := v.elementValues(ctx, script.ScopeVU); err != nil {
				return err
			}
			v.vuValues = true
		}
		if err := v.elementValues(ctx, script.ScopeIteration); err != nil {
			return err
		}
	}
	if v.sc.cookies {
		v.jar, _ = cookiejar.New(nil) // a fresh visitor each iteration; New never fails without options
	}
	for gi, g := range v.sc.groups {
		lastGroup := gi == len(v.sc.groups)-1
		groupStart := time.Now()
		var groupBytesIn, groupBytesOut int64
		groupClass := metrics.NoError
		for ri := 0; ri < len(g.requests); ri++ {
			r := g.requests[ri]
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if v.p.draining() {
				return errDrained
			}
			var class metrics.ErrorClass
			var in, out int64
			if r.r.Batch != 0 {
				end := ri + 1
				for end < len(g.requests) && g.requests[end].r.Batch == r.r.Batch {
					end++
				}
				class, in, out = v.batch(ctx, g.requests[ri:end], measureFrom)
				ri, r = end-1, g.requests[end-1]
			} else {
				class, in, out = v.request(ctx, r, measureFrom)
			}
			last := lastGroup && ri == len(g.requests)-1 && g.g.Think == nil
			measureFrom = time.Time{}
			groupBytesIn += in
			groupBytesOut += out
			if groupClass == metrics.NoError {
				groupClass = class
			}
			if ctx.Err() != nil {
				return ctx.Err() // the request was cut short by the end of the run
			}
			if r.r.Think != nil && !(last && v.p.stopping()) {
				if err := v.think(ctx, r.r.Think); err != nil {
					return err
				}
			}
		}
		v.p.rec.Label(g.label).Record(time.Since(groupStart), groupBytesIn, groupBytesOut, groupClass)
		// A pause after the iteration's last request serves no purpose once the run is
		// stopping: nothing follows it.
		if g.g.Think != nil && !(lastGroup && v.p.stopping()) {
			if err := v.think(ctx, g.g.Think); err != nil {
				return err
			}
		}
	}
	return nil
}

// restingBody is the most of a response body's buffer a VU keeps while it waits.
const restingBody = 4 << 10

// rest lets go of what a VU need not hold while it waits (thinks, or waits for its next
// arrival): a body buffer that a large response grew, up to the body cap (1 MB by default) for
// each VU.
func (v *vu) rest() {
	if cap(v.rep.body) > restingBody {
		v.rep.body = nil
	}
}

// think pauses like a person would, and measures how late the pause ends: a late wake-up means
// the generator is too busy to keep its schedule.
func (v *vu) think(ctx context.Context, t *script.Think) error {
	d := t.Sample(v.rng)
	if d <= 0 {
		return nil
	}
	v.rest()
	now := time.Now()
	v.p.health.busyTime.Add(int64(now.Sub(v.busyFrom)))
	defer func() { v.busyFrom = time.Now() }()
	due := now.Add(d)
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-v.p.drained: // nil in a debug's one iteration: never ready
		return errDrained
	case now := <-timer.C:
		// In the closed model a think time's end is the VU's next scheduled start; in the open
		// model the schedule is the arrivals', and a wake-up within an iteration is neither an
		// arrival nor lateness of it.
		if v.sc.load.Model == script.Closed {
			v.p.health.observe(due, now)
		}
		return nil
	}
}

// request sends one request, extracts and asserts, records it, and returns its class and bytes.
func (v *vu) request(ctx context.Context, r *compiledRequest, measureFrom time.Time) (metrics.ErrorClass, int64, int64) {
	ex, err := v.prepare(r)
	if err != nil {
		// A template that cannot render (an extraction earlier failed and left no default):
		// the request is never sent. It is counted apart rather than as a request, whose
		// made-up latency would pull the percentiles down; its group fails.
		v.p.unsent.Add(1)
		v.traceFailure(r, err)
		return metrics.ErrAssertion, 0, 0
	}
	if r.r.WebSocket != nil {
		return v.websocket(ctx, r, ex, measureFrom)
	}
	var hookReq *sdk.Request
	if len(r.r.Plugins) > 0 {
		hooksStart := time.Now()
		if hookReq, err = v.before(ctx, r, ex); err != nil {
			if ctx.Err() != nil {
				return metrics.NoError, 0, 0 // the run ended while the hook ran
			}
			// The request is never sent: counted apart like one whose template failed, with
			// the reason in the result's hook errors.
			v.p.unsent.Add(1)
			v.traceFailure(r, err)
			return metrics.ErrAssertion, 0, 0
		}
		if !measureFrom.IsZero() {
			// In the open model the latency counts from when the iteration was due; the time
			// in hooks is reported apart, so it is left out of that too.
			measureFrom = measureFrom.Add(time.Since(hooksStart))
		}
	}
	start := time.Now()
	var jar cookieJar
	if v.jar != nil {
		jar = v.jar
	}
	ex.deadline = start.Add(ex.timeout)
	v.t.do(ctx, ex, jar, &v.rep)
	end := time.Now()
	elapsed := end.Sub(start)
	rep := &v.rep
	if rep.interrupted {
		return metrics.NoError, rep.bytesIn, rep.bytesOut // not a measurement: the run ended
	}
	class := rep.class
	var failures []string
	if rep.err == nil {
		if hookReq != nil && r.runsAfter {
			failures = v.after(ctx, r, hookReq, rep, end.Sub(start))
			if ctx.Err() != nil {
				return metrics.NoError, rep.bytesIn, rep.bytesOut // cut short by the end of the run
			}
		}
		var checkFailures []string
		class, checkFailures = v.check(r, rep, end.Sub(start))
		if len(failures) > 0 && class == metrics.NoError {
			class = metrics.ErrAssertion
		}
		failures = append(failures, checkFailures...)
	}
	v.p.rec.Label(r.label).Record(elapsed, rep.bytesIn, rep.bytesOut, class)
	if class != metrics.NoError {
		v.p.errSamples.Add(r.r.Name, class.String(), failureText(rep, failures), 1)
	}
	v.p.health.targetTime.Add(int64(elapsed))
	if !measureFrom.IsZero() {
		v.p.rec.Label(v.p.scheduleLabel).Record(end.Sub(measureFrom), 0, 0, class)
	}
	if rep.err != nil && errors.Is(rep.err, netpolicy.ErrRefused) {
		// The agent refuses where the request goes, before sending anything: every iteration
		// would be refused alike, as fast as the CPU goes. The run ends, saying why.
		v.p.exhaust(fmt.Errorf("request %s: %w", r.r.Name, rep.err))
	}
	if v.p.opts.Trace != nil {
		v.trace(r, ex, rep, elapsed, failures)
	}
	return class, rep.bytesIn, rep.bytesOut
}

// failureText is why a request failed, in a sentence: its transport error, its first failed
// check, or its status.
func failureText(rep *reply, failures []string) string {
	switch {
	case rep.err != nil:
		return rep.err.Error()
	case len(failures) > 0:
		return failures[0]
	}
	return fmt.Sprintf("status %d", rep.status)
}

// prepare renders a request's URL, headers and body.
func (v *vu) prepare(r *compiledRequest) (*exchange, error) {
	ex := &v.ex
	*ex = exchange{method: r.r.Method, timeout: r.r.Timeout, http2: r.r.HTTP2, maxRedirects: r.r.Redirects, url: r.url, rawURL: r.rawURL,
		decode: r.needBody || v.p.opts.Trace != nil}
	if r.static {
		if ex.prepared = r.prepared.Load(); ex.prepared != nil {
			return ex, nil // built at the first send: nothing to render
		}
	}
	var err error
	if ex.url == nil {
		v.urlBuf, err = r.r.AppendURL(v.lookup, v.urlBuf[:0])
		if err != nil {
			return nil, err
		}
		ex.rawURL = string(v.urlBuf)
		if ex.url, err = url.Parse(ex.rawURL); err != nil {
			return nil, fmt.Errorf("url %q: %w", v.urlBuf, err)
		}
		if !ex.url.IsAbs() {
			if v.p.baseURL == nil {
				return nil, fmt.Errorf("url %q is relative and the script has no base_url", ex.rawURL)
			}
			ex.url = v.p.baseURL.ResolveReference(ex.url)
			ex.rawURL = ex.url.String()
		}
	}
	v.header = v.header[:0]
	for i, h := range r.r.Headers {
		if i == r.noEncoding {
			continue
		}
		if lit := r.headers[i]; lit != nil {
			v.header = append(v.header, [2]string{h.Name, *lit})
			continue
		}
		v.valBuf, err = h.Value.Render(v.lookup, v.valBuf[:0])
		if err != nil {
			return nil, err
		}
		v.header = append(v.header, [2]string{h.Name, string(v.valBuf)})
	}
	if r.noEncoding < 0 {
		v.header = append(v.header, [2]string{"Accept-Encoding", AcceptEncoding})
	}
	if b := r.r.Body; isStreamed(b) {
		var ct string
		if ex.stream, ct, err = v.streamBody(r); err != nil {
			return nil, err
		}
		if !hasHeader(v.header, "Content-Type") {
			v.header = append(v.header, [2]string{"Content-Type", ct})
		}
	} else if b != nil {
		v.bodyBuf, err = b.Content.Render(v.lookup, v.bodyBuf[:0])
		if err != nil {
			return nil, err
		}
		ex.body = v.bodyBuf
		if b.ContentType != "" && !hasHeader(v.header, "Content-Type") {
			v.header = append(v.header, [2]string{"Content-Type", b.ContentType})
		}
	}
	ex.header = v.header
	if r.static {
		// A request that did not serialize is not shared: fasthttp, writing it at the send,
		// would change it (its Host header) under the other VUs.
		if pr := prepare(ex); pr.wire != nil {
			if !r.prepared.CompareAndSwap(nil, pr) {
				pr = r.prepared.Load()
			}
			ex.prepared = pr
		}
	}
	return ex, nil
}

func hasHeader(h [][2]string, name string) bool {
	for _, kv := range h {
		if strings.EqualFold(kv[0], name) {
			return true
		}
	}
	return false
}

// check runs the request's extractors, then its assertions, and returns the request's class:
// the status's class when the status assertion fails on a 4xx or 5xx, ErrAssertion for any
// other failed check or extraction, NoError otherwise. An explicit status assertion accepting a
// 404 makes a 404 a success.
func (v *vu) check(r *compiledRequest, rep *reply, took time.Duration) (metrics.ErrorClass, []string) {
	return v.checkWith(r.r.Extract, r.r.Assert, r.checks, r.needsJSON, rep, took)
}

// checkWith is check with the extractors and assertions given: a request's, or a WebSocket
// message's. Each assertion's pass or failure is tallied under its label in checks (none for
// -1).
func (v *vu) checkWith(extract []*script.Extractor, assert []*script.Assertion, checks []int, needsJSON bool, rep *reply, took time.Duration) (metrics.ErrorClass, []string) {
	var doc script.JSONDoc // read once, for every JSON check of the response
	var docErr error
	if needsJSON {
		doc, docErr = script.ReadJSON(rep.body)
	}
	var failures []string
	for _, x := range extract {
		val, ok := v.extract(x, rep, doc, docErr)
		switch {
		case ok:
			v.vars[x.Var] = val
		case x.HasDefault:
			v.vars[x.Var] = x.Default
		default:
			failures = append(failures, fmt.Sprintf("extract %s (%s): nothing found", x.Var, x.Kind))
		}
	}
	class := metrics.NoError
	if len(failures) > 0 {
		class = metrics.ErrAssertion
	}
	for i, a := range assert {
		ok, why := v.assert(a, rep, doc, docErr, took)
		if checks[i] >= 0 {
			tally := metrics.NoError
			if !ok {
				tally = metrics.ErrAssertion
			}
			v.p.rec.Label(checks[i]).Record(0, 0, 0, tally)
		}
		if ok {
			continue
		}
		failures = append(failures, why)
		switch {
		case a.Kind == script.AssertStatus && rep.status >= 400:
			class = statusClass(rep.status)
		case class == metrics.NoError:
			class = metrics.ErrAssertion
		}
	}
	return class, failures
}

func (v *vu) extract(x *script.Extractor, rep *reply, doc script.JSONDoc, docErr error) (string, bool) {
	switch x.Kind {
	case script.ExtractJSON:
		if docErr != nil {
			return "", false
		}
		return x.JSONPath.SelectString(doc)
	case script.ExtractRegex:
		m := x.Regex.FindSubmatch(rep.body)
		if m == nil {
			return "", false
		}
		if len(m) > 1 {
			return string(m[1]), true
		}
		return string(m[0]), true
	case script.ExtractHeader:
		if vals := rep.header.Values(x.Name); len(vals) > 0 {
			return vals[0], true
		}
	case script.ExtractCookie:
		for i := len(rep.cookies) - 1; i >= 0; i-- { // the last hop's cookie wins
			if c := rep.cookies[i]; c.Name == x.Name {
				return c.Value, true
			}
		}
	}
	return "", false
}

func (v *vu) assert(a *script.Assertion, rep *reply, doc script.JSONDoc, docErr error, took time.Duration) (bool, string) {
	switch a.Kind {
	case script.AssertStatus:
		if a.StatusOK(rep.status) {
			return true, ""
		}
		return false, fmt.Sprintf("status %d not accepted", rep.status)
	case script.AssertBodyContains:
		want, err := a.Text.Render(v.lookup, v.valBuf[:0])
		if err != nil {
			return false, "body_contains: " + err.Error()
		}
		v.valBuf = want
		if bytes.Contains(rep.body, want) {
			return true, ""
		}
		return false, fmt.Sprintf("body does not contain %q", want)
	case script.AssertBodyMatches:
		if a.Regex.Match(rep.body) {
			return true, ""
		}
		return false, fmt.Sprintf("body does not match %s", a.Regex)
	case script.AssertJSON:
		if docErr != nil {
			return false, "body is not JSON"
		}
		ok, why, err := a.JSONCheck(doc, v.lookup)
		if err != nil {
			return false, "json: " + err.Error()
		}
		return ok, why
	case script.AssertMaxDuration:
		if took <= a.MaxDuration {
			return true, ""
		}
		return false, fmt.Sprintf("took %s, more than %s", took.Round(time.Millisecond), a.MaxDuration)
	}
	return true, ""
}
