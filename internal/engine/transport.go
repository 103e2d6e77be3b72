package engine

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/barrage-load/barrage/internal/metrics"
)

// exchange is one request to send.
type exchange struct {
	method       string
	url          *url.URL
	rawURL       string // url as text, rendered once
	header       [][2]string
	body         []byte
	timeout      time.Duration
	deadline     time.Time // when the request, redirects included, must be done; from timeout if zero
	http2        bool
	maxRedirects int
	// prepared, when set, is the request already built for the first hop: a request whose
	// URL, headers and body are all literal is built once per VU, not once per send.
	prepared *preparedRequest
}

// preparedRequest is a request that is the same bytes at every send.
type preparedRequest struct {
	req  *fasthttp.Request // for fasthttp's decisions: scheme, method, retries
	wire []byte            // what goes on the connection
}

// reply is what came back. Its body is the first bodyCap bytes only; BytesIn counts all of it.
type reply struct {
	status   int
	header   http.Header // every response header, only when keepHeader (header extractors, debug)
	cookies  []*http.Cookie
	body     []byte
	bytesIn  int64
	bytesOut int64
	url      *url.URL // after redirects
	err      error
	class    metrics.ErrorClass
	// interrupted means the run's end cut the request short: it is neither a success nor the
	// target's failure, and is not recorded as a request.
	interrupted bool
}

// cookieJar is what a transport needs of a jar: net/http/cookiejar implements it.
type cookieJar interface {
	SetCookies(u *url.URL, cookies []*http.Cookie)
	Cookies(u *url.URL) []*http.Cookie
}

// transport sends a VU's requests: HTTP/1.1 (and TLS) through fasthttp, which costs about half
// the CPU of net/http per request; HTTP/2 through net/http when a request asks for it. Each VU
// has its own, so that connections, source addresses and cookies are per VU, like the users it
// stands for.
type transport struct {
	local       *net.TCPAddr // source address, or nil
	tlsConfig   *tls.Config  // for fasthttp: HTTP/1.1 only
	h2TLSConfig *tls.Config  // for net/http, which adds h2 to NextProtos of the config it gets
	bodyCap     int
	keepHeader  bool
	keepCookies bool
	hosts       map[hostKey]*fasthttp.HostClient
	lastKey     hostKey // the host of the last request, and its client
	lastHost    *fasthttp.HostClient
	h2          *http.Client
	req         *fasthttp.Request
	res         *fasthttp.Response
	buf         []byte
	// deadline, left, wire and rep are the request in flight's, for RoundTrip: left is the
	// time to its deadline when it was handed over, and wire its bytes when they were
	// serialized once (preparedRequest), else nil.
	deadline time.Time
	left     time.Duration
	wire     []byte
	rep      *reply

	// conns are the open HTTP/1.1 connections, so that the end of a run can cut them: fasthttp
	// knows only per-request deadlines, not contexts.
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	cut   bool

	// read and written count the bytes on the wire (headers, bodies, chunk framing, TLS),
	// for every connection of the VU. Atomic because net/http reads HTTP/2 connections from a
	// goroutine of its own.
	read, written atomic.Int64
}

func newTransport(local net.IP, insecure bool, bodyCap int, keepHeader, keepCookies bool) *transport {
	t := &transport{
		bodyCap:     bodyCap,
		keepHeader:  keepHeader,
		keepCookies: keepCookies,
		hosts:       make(map[hostKey]*fasthttp.HostClient, 1),
		tlsConfig:   &tls.Config{InsecureSkipVerify: insecure, NextProtos: []string{"http/1.1"}}, //nolint:gosec // only when the script asks for it
		h2TLSConfig: &tls.Config{InsecureSkipVerify: insecure},                                   //nolint:gosec // likewise
		req:         &fasthttp.Request{},
		res:         &fasthttp.Response{},
		conns:       make(map[net.Conn]struct{}),
	}
	if local != nil {
		t.local = &net.TCPAddr{IP: local}
	}
	return t
}

// close drops the VU's connections.
func (t *transport) close() {
	for _, hc := range t.hosts {
		hc.CloseIdleConnections()
	}
	if t.h2 != nil {
		t.h2.CloseIdleConnections()
	}
}

// cutAll makes every open and future HTTP/1.1 connection of the VU fail at once: the run is
// over and must not wait for a hanging target.
func (t *transport) cutAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cut = true
	past := time.Unix(1, 0)
	for c := range t.conns {
		_ = c.SetDeadline(past)
	}
}

// trackedConn counts the bytes it carries into its transport, and removes itself from the
// transport's set when closed.
type trackedConn struct {
	net.Conn
	t    *transport
	once sync.Once
}

func (c *trackedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.t.read.Add(int64(n))
	return n, err
}

func (c *trackedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.t.written.Add(int64(n))
	return n, err
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.t.mu.Lock()
		delete(c.t.conns, c.Conn)
		c.t.mu.Unlock()
	})
	return c.Conn.Close()
}

// retryStaleConn allows the one retry: an idempotent request whose connection the server had
// already closed, before any byte of the response.
func retryStaleConn(req *fasthttp.Request, attempts int, err error) (resetTimeout, retry bool) {
	// fasthttp reports the closed connection as io.EOF here, and as ErrConnectionClosed to
	// the caller.
	if attempts > 1 || !(errors.Is(err, io.EOF) || errors.Is(err, fasthttp.ErrConnectionClosed)) {
		return false, false
	}
	switch string(req.Header.Method()) {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete:
		return false, true
	}
	return false, false
}

// track registers a new connection, or refuses it once the run is over.
func (t *transport) track(c net.Conn) (net.Conn, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cut {
		c.Close()
		return nil, context.Canceled
	}
	t.conns[c] = struct{}{}
	return &trackedConn{Conn: c, t: t}, nil
}

// hostKey names a connection pool; a struct rather than a joined string, so that finding the
// pool for a request allocates nothing.
type hostKey struct{ scheme, host string }

func (t *transport) host(u *url.URL) *fasthttp.HostClient {
	key := hostKey{u.Scheme, u.Host}
	if key == t.lastKey && t.lastHost != nil {
		return t.lastHost // a VU mostly talks to one host: no hashing
	}
	hc, ok := t.hosts[key]
	if !ok {
		hc = t.newHost(u)
		t.hosts[key] = hc
	}
	t.lastKey, t.lastHost = key, hc
	return hc
}

func (t *transport) newHost(u *url.URL) *fasthttp.HostClient {
	addr := u.Host
	if u.Port() == "" {
		if u.Scheme == "https" {
			addr += ":443"
		} else {
			addr += ":80"
		}
	}
	dialer := &fasthttp.TCPDialer{LocalAddr: t.local}
	return &fasthttp.HostClient{
		Addr:      addr,
		IsTLS:     u.Scheme == "https",
		TLSConfig: t.tlsConfig,
		DialTimeout: func(addr string, timeout time.Duration) (net.Conn, error) {
			c, err := dialer.DialTimeout(addr, timeout)
			if err != nil {
				return nil, err
			}
			return t.track(c)
		},
		MaxConns:  1 << 10,
		Transport: t, // RoundTrip: bodies read up to the cap
		// Large enough for the headers real sites send (long CSPs, many cookies: fasthttp
		// refuses a response whose headers do not fit); fasthttp
		// takes read buffers from a pool per request, so idle connections do not hold them.
		ReadBufferSize:           16 << 10,
		NoDefaultUserAgentHeader: true,
		// One retry, for one failure only: a server that closed a keep-alive connection
		// while the VU was thinking (a common idle timeout is 5 s) closes it before the first
		// byte of the response. Browsers send such requests again; any other failure counts.
		MaxIdemponentCallAttempts: 2,
		RetryIfErr:                retryStaleConn,
	}
}

// do sends ex and follows up to ex.maxRedirects redirects. With a jar, each hop takes the
// cookies the previous one set, as a browser does.
func (t *transport) do(ctx context.Context, ex *exchange, jar cookieJar, r *reply) {
	*r = reply{url: ex.url, body: r.body[:0], header: r.header, cookies: r.cookies[:0]}
	read, written := t.read.Load(), t.written.Load()
	defer func() { r.bytesIn, r.bytesOut = t.read.Load()-read, t.written.Load()-written }()
	if ex.http2 {
		t.doH2(ctx, ex, jar, r)
		return
	}
	u, raw := ex.url, ex.rawURL
	method, body, header := ex.method, ex.body, ex.header
	deadline := ex.deadline
	if deadline.IsZero() {
		deadline = time.Now().Add(ex.timeout)
	}
	for hop := 0; ; hop++ {
		if raw == "" {
			raw = u.String()
		}
		req := t.req
		if hop == 0 && ex.prepared != nil {
			req, t.wire = ex.prepared.req, ex.prepared.wire
		} else {
			buildRequest(req, raw, method, header, body)
			t.wire = nil
		}
		// The time left: the whole timeout at the first hop, which starts now, without reading
		// the clock again.
		left := ex.timeout
		if hop > 0 {
			if left = time.Until(deadline); left <= 0 {
				r.err, r.class = fasthttp.ErrTimeout, metrics.ErrTimeout
				return
			}
		}
		t.send(req, u, jar, deadline, left, r)
		if r.err != nil && ctx.Err() != nil {
			r.interrupted = true
		}
		if r.err != nil || hop >= ex.maxRedirects || !isRedirect(r.status) {
			return
		}
		loc := t.res.Header.Peek("Location")
		next, err := u.Parse(string(loc))
		if len(loc) == 0 || err != nil {
			return
		}
		if r.status == http.StatusSeeOther && method != http.MethodHead ||
			(r.status == http.StatusMovedPermanently || r.status == http.StatusFound) && method == http.MethodPost {
			method, body = http.MethodGet, nil
			header = withoutHeaders(header, "Content-Type", "Content-Length")
		}
		if next.Host != u.Host {
			// Credentials meant for one host are not handed to another.
			header = withoutHeaders(header, "Authorization", "Cookie")
		} else {
			header = withoutHeaders(header, "Cookie")
		}
		u, r.url, raw = next, next, ""
	}
}

// withoutHeaders returns h without the named headers, copying only when something is removed.
func withoutHeaders(h [][2]string, names ...string) [][2]string {
	var out [][2]string
	for i, kv := range h {
		drop := false
		for _, n := range names {
			drop = drop || strings.EqualFold(kv[0], n)
		}
		if drop && out == nil {
			out = append(make([][2]string, 0, len(h)), h[:i]...)
		} else if !drop && out != nil {
			out = append(out, kv)
		}
	}
	if out == nil {
		return h
	}
	return out
}

func isRedirect(status int) bool {
	switch status {
	case 301, 302, 303, 307, 308:
		return true
	}
	return false
}

// buildRequest fills req for one send.
func buildRequest(req *fasthttp.Request, rawURL, method string, header [][2]string, body []byte) {
	req.Reset()
	req.Header.DisableNormalizing()
	req.Header.SetMethod(method)
	req.SetRequestURI(rawURL)
	for _, h := range header {
		req.Header.Set(h[0], h[1])
	}
	if body != nil {
		req.SetBodyRaw(body)
	}
}

// prepare builds a request once, for exchanges that always send the same bytes.
func prepare(ex *exchange) *preparedRequest {
	req := &fasthttp.Request{}
	// A copy of the body: ex.body is the VU's render buffer, which the next request reuses.
	buildRequest(req, ex.rawURL, ex.method, ex.header, append([]byte(nil), ex.body...))
	var wire bytes.Buffer
	if _, err := req.WriteTo(&wire); err != nil {
		return &preparedRequest{req: req} // fasthttp will report the same error at the send
	}
	return &preparedRequest{req: req, wire: wire.Bytes()}
}

func (t *transport) send(req *fasthttp.Request, u *url.URL, jar cookieJar, deadline time.Time, left time.Duration, r *reply) {
	res := t.res
	res.Reset()
	if jar != nil {
		if cs := jar.Cookies(u); len(cs) > 0 {
			for _, c := range cs {
				req.Header.SetCookie(c.Name, c.Value)
			}
		}
	}
	t.deadline, t.left, t.rep = deadline, left, r
	err := t.host(u).Do(req, res) // through RoundTrip, which applies the deadline and keeps the body
	_ = res.CloseBodyStream()
	if err != nil {
		r.err, r.class = err, classify(err)
		return
	}
	r.status = res.StatusCode()
	if t.keepCookies {
		hopCookies := len(r.cookies)
		for _, v := range res.Header.Cookies() {
			if c, err := http.ParseSetCookie(string(v)); err == nil {
				r.cookies = append(r.cookies, c)
			}
		}
		if jar != nil && len(r.cookies) > hopCookies {
			jar.SetCookies(u, r.cookies[hopCookies:])
		}
	}
	if t.keepHeader {
		if r.header == nil {
			r.header = make(http.Header)
		}
		clear(r.header)
		for k, v := range res.Header.All() {
			r.header.Add(string(k), string(v))
		}
	}
	r.class = statusClass(r.status)
}

// RoundTrip sends one request on a connection of hc and reads the response: fasthttp's own
// round trip, less what Barrage does not use, with the body read up to the cap into the reply.
// fasthttp reads a body either whole into memory, whatever its length, or, asked to stream,
// through a stream it allocates for every response, small ones too, that holds the connection
// until the caller closes it. Here a body of stated length within the cap is read in place, and
// any other is streamed and drained before the connection goes back to the pool: a VU holds at
// most bodyCap bytes of any body.
func (t *transport) RoundTrip(hc *fasthttp.HostClient, req *fasthttp.Request, resp *fasthttp.Response) (retry bool, err error) {
	cc, err := hc.AcquireConn(t.left, req.ConnectionClose())
	if err != nil {
		return false, err
	}
	conn := cc.Conn()
	if err := conn.SetDeadline(t.deadline); err != nil {
		hc.CloseConn(cc)
		return true, err
	}
	bw := hc.AcquireWriter(conn)
	if t.wire != nil {
		_, err = bw.Write(t.wire)
	} else {
		err = req.Write(bw)
	}
	if err == nil {
		err = bw.Flush()
	}
	hc.ReleaseWriter(bw)
	if err != nil {
		hc.CloseConn(cc)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			err = fasthttp.ErrTimeout
		}
		return true, err
	}
	resp.SkipBody = resp.SkipBody || req.Header.IsHead()
	br := hc.AcquireReader(conn)
	headerRead, err := t.readResponse(br, resp)
	hc.ReleaseReader(br)
	if err != nil {
		hc.CloseConn(cc)
		// Like fasthttp: a failure before the response's headers may be a stale connection,
		// which RetryIfErr decides on; one in the body is the target's.
		return !headerRead, err
	}
	// A body that runs until the server closes the connection leaves nothing to reuse.
	if req.ConnectionClose() || resp.ConnectionClose() || resp.Header.ContentLength() == -2 {
		hc.CloseConn(cc)
	} else {
		hc.ReleaseConn(cc)
	}
	return false, nil
}

// readResponse reads a response's headers into resp and its body, up to the cap, into the
// reply in flight. headerRead says whether the headers were read when it fails.
func (t *transport) readResponse(br *bufio.Reader, resp *fasthttp.Response) (headerRead bool, err error) {
	resp.ResetBody()
	if err := resp.Header.Read(br); err != nil {
		return false, err
	}
	if resp.StatusCode() == fasthttp.StatusContinue {
		if err := resp.Header.Read(br); err != nil {
			return false, err
		}
	}
	r := t.rep
	r.body = r.body[:0]
	if status := resp.StatusCode(); resp.SkipBody || status < 200 || status == http.StatusNoContent || status == http.StatusNotModified {
		return true, nil
	}
	if n := resp.Header.ContentLength(); n >= 0 && n <= t.bodyCap {
		resp.StreamBody = false
		if err := resp.ReadBody(br, t.bodyCap); err != nil {
			return true, err
		}
		r.body = append(r.body, resp.Body()...)
		return true, nil
	}
	// Longer than the cap, chunked, or until the connection closes.
	resp.StreamBody = true
	if err := resp.ReadBody(br, t.bodyCap); err != nil {
		return true, err
	}
	return true, t.readBody(resp.BodyStream(), r)
}

// readBody keeps the first bodyCap bytes and reads the rest without keeping it: memory per VU
// stays bounded whatever the target sends (the connection counts the bytes).
func (t *transport) readBody(src io.Reader, r *reply) error {
	if src == nil {
		return nil
	}
	if cap(t.buf) < 32<<10 {
		t.buf = make([]byte, 32<<10)
	}
	for {
		n, err := src.Read(t.buf[:cap(t.buf)])
		if room := t.bodyCap - len(r.body); n > 0 && room > 0 {
			r.body = append(r.body, t.buf[:min(n, room)]...)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// doH2 sends through net/http, which speaks HTTP/2 over TLS.
func (t *transport) doH2(ctx context.Context, ex *exchange, jar cookieJar, r *reply) {
	if t.h2 == nil {
		d := &net.Dialer{LocalAddr: t.local, Timeout: 30 * time.Second}
		dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return t.track(c)
		}
		t.h2 = &http.Client{
			Transport: &http.Transport{DialContext: dial, TLSClientConfig: t.h2TLSConfig, ForceAttemptHTTP2: true,
				MaxIdleConnsPerHost: 1, DisableCompression: true},
		}
	}
	t.h2.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > ex.maxRedirects {
			return http.ErrUseLastResponse
		}
		return nil
	}
	if jar != nil {
		t.h2.Jar = jar.(http.CookieJar)
	} else {
		t.h2.Jar = nil
	}
	ctx, cancel := context.WithTimeout(ctx, ex.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, ex.method, ex.rawURL, bytes.NewReader(ex.body))
	if err != nil {
		r.err, r.class = err, metrics.ErrConnect
		return
	}
	for _, h := range ex.header {
		req.Header.Set(h[0], h[1])
	}
	res, err := t.h2.Do(req)
	if err != nil {
		r.err, r.class, r.interrupted = err, classify(err), errors.Is(err, context.Canceled)
		return
	}
	defer res.Body.Close()
	r.status, r.url = res.StatusCode, res.Request.URL
	if err := t.readBody(res.Body, r); err != nil {
		r.err, r.class, r.interrupted = err, classify(err), errors.Is(err, context.Canceled)
		return
	}
	if t.keepCookies {
		r.cookies = append(r.cookies, res.Cookies()...)
	}
	if t.keepHeader {
		r.header = res.Header
	}
	r.class = statusClass(r.status)
}

// classify sorts a transport failure: a timeout (the target too slow), or else a connection
// failure (refused, reset, closed before answering, TLS).
func classify(err error) metrics.ErrorClass {
	var ne net.Error
	if errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout()) {
		return metrics.ErrTimeout
	}
	return metrics.ErrConnect
}

// statusClass is the error class of an HTTP status, or metrics.NoError.
func statusClass(status int) metrics.ErrorClass {
	switch {
	case status >= 500:
		return metrics.Err5xx
	case status >= 400:
		return metrics.Err4xx
	}
	return metrics.NoError
}
