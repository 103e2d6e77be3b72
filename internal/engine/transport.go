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
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/netpolicy"
	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/script"
)

// exchange is one request to send.
type exchange struct {
	method       string
	url          *url.URL
	rawURL       string // url as text, rendered once
	header       [][2]string
	body         []byte
	stream       *bodyStream // a file or multipart body, sent in place of body
	timeout      time.Duration
	deadline     time.Time // when the request, redirects included, must be done; from timeout if zero
	http2        bool
	maxRedirects int
	// decode: the body is read (extractors, assertions, plugins, a trace), so it is decoded from
	// its Content-Encoding.
	decode bool
	// prepared, when set, is the request already built for the first hop: a request whose
	// URL, headers and body are all literal is built once per VU, not once per send.
	prepared *preparedRequest
}

// preparedRequest is a request that is the same bytes at every send.
type preparedRequest struct {
	req  *fasthttp.Request // for the decisions: method, retries, Connection: close
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
	// redirects are the hops followed before the last response, when the transport traces.
	redirects []run.Redirect
	// encoding is the Content-Encoding the body was decoded from ("" when it came plain or was
	// not decoded); decoded counts its decoded bytes, up to just past the cap when decodedPart.
	encoding    string
	decoded     int64
	decodedPart bool
	err         error
	class       metrics.ErrorClass
	// interrupted means the run's end cut the request short: it is neither a success nor the
	// target's failure, and is not recorded as a request.
	interrupted bool
}

// cookieJar is what a transport needs of a jar: net/http/cookiejar implements it.
type cookieJar interface {
	SetCookies(u *url.URL, cookies []*http.Cookie)
	Cookies(u *url.URL) []*http.Cookie
}

// transport sends a VU's requests: HTTP/1.1 (and TLS) on connections of its own, one per host,
// with fasthttp's request and response types, which cost about half the CPU of net/http per
// request; HTTP/2 through net/http when a request asks for it. Each VU has its own, so that
// connections, source addresses and cookies are per VU, like the users it stands for.
type transport struct {
	local       *net.TCPAddr // source address, or nil
	nw          *network     // the run's names, certificates and proxy
	bodyCap     int
	keepHeader  bool
	keepCookies bool
	hosts       map[hostKey]*hostConn
	lastKey     hostKey // the host of the last request, and its connection
	lastHost    *hostConn
	h2          map[string]*http.Client // by network.certKey of the host
	// req and res are the exchange in flight's (do's), nil between exchanges.
	req *fasthttp.Request
	res *fasthttp.Response
	buf *[32 << 10]byte // readOnce's, taken while a body is read
	// wire is the bytes of the request in flight when they were serialized once
	// (preparedRequest), else nil.
	wire []byte
	// decode is the request in flight's exchange.decode.
	decode bool
	// traceRedirects keeps each followed redirect in reply.redirects.
	traceRedirects bool
	lean           leanHeader // readLeanHeader's, reused

	// conns are the open connections, so that the end of a run can cut them: requests carry
	// deadlines, not contexts.
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	cut   atomic.Bool // set under mu

	// targets is where the load may go, checked at each dial; nil allows all.
	targets *netpolicy.Policy

	// read and written count the bytes on the wire (headers, bodies, chunk framing, TLS),
	// for every connection of the VU. Atomic because net/http reads HTTP/2 connections from a
	// goroutine of its own.
	read, written atomic.Int64
}

// newTransport makes a VU's transport; a nil nw is the machine's resolver and roots, no proxy.
func newTransport(local net.IP, nw *network, bodyCap int, keepHeader, keepCookies bool, targets *netpolicy.Policy) *transport {
	if nw == nil {
		nw, _ = newNetwork(&script.Script{}, Options{}) // nothing in it can fail
	}
	t := &transport{
		targets:     targets,
		bodyCap:     bodyCap,
		keepHeader:  keepHeader,
		keepCookies: keepCookies,
		hosts:       make(map[hostKey]*hostConn, 1),
		nw:          nw,
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
		if hc.conn != nil {
			hc.conn.Close()
			hc.conn = nil
		}
	}
	for _, c := range t.h2 {
		c.CloseIdleConnections()
	}
}

// cutAll makes every open and future HTTP/1.1 connection of the VU fail at once: the run is
// over and must not wait for a hanging target.
func (t *transport) cutAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cut.Store(true)
	past := time.Unix(1, 0)
	for c := range t.conns {
		_ = c.SetDeadline(past)
	}
}

// trackedConn counts the bytes it carries into its transport, and removes itself from the
// transport's set when closed.
type trackedConn struct {
	net.Conn
	rw   io.ReadWriter // the Conn, or its raw system calls where the platform has them
	t    *transport
	once sync.Once
}

func (c *trackedConn) Read(b []byte) (int, error) {
	n, err := c.rw.Read(b)
	c.t.read.Add(int64(n))
	return n, err
}

func (c *trackedConn) Write(b []byte) (int, error) {
	n, err := c.rw.Write(b)
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

// staleConn says whether err, on a connection used before and ahead of any byte of the
// response, is the server having closed the connection while it idled (a common idle timeout is
// 5 s): browsers then send an idempotent request again, once, on a new connection.
func staleConn(req *fasthttp.Request, err error) bool {
	if !(errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)) {
		return false
	}
	switch string(req.Header.Method()) {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// track registers a new connection, or refuses it once the run is over.
func (t *transport) track(c net.Conn) (net.Conn, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cut.Load() {
		c.Close()
		return nil, context.Canceled
	}
	t.conns[c] = struct{}{}
	tc := &trackedConn{Conn: c, rw: c, t: t}
	if rw := newRawIO(c); rw != nil {
		tc.rw = rw
	}
	return tc, nil
}

// hostKey names a host's connection; a struct rather than a joined string, so that finding the
// connection for a request allocates nothing.
type hostKey struct{ scheme, host string }

// hostConn is a VU's connection to one host. A VU sends one request at a time, so one
// keep-alive connection per host is all it ever needs: no pool, no locks.
type hostConn struct {
	addr string // host:port
	dial string // where to connect: addr, where the script's hosts point it, or the proxy
	// tunnel: an https host through the proxy, reached by CONNECT; origin: a plain http host
	// through the proxy, "http://host", whose requests name it in their request line.
	tunnel bool
	origin string
	tls    *tls.Config // for https: the VU's config with the host's name; nil for http
	conn   net.Conn    // the idle keep-alive connection, or nil
	// The deadline set on conn, or on the connection in use while conn is nil.
	deadline time.Time
}

// The most a request may time out after its deadline (see setDeadline), and its share of
// the timeout when that is smaller.
const (
	deadlineSlack     = 10 * time.Millisecond
	deadlineSlackPart = 100
)

// setDeadline gives conn a deadline for a request with deadline and timeout: no sooner than
// the request's, and at most 1% of its timeout, and at most 10 ms, later. A deadline already set
// in that span stays, so that a busy connection's deadline, and the runtime timer behind it,
// moves every few milliseconds rather than at every request (5-8% of the generator's CPU per
// request at full speed).
func (hc *hostConn) setDeadline(conn net.Conn, deadline time.Time, timeout time.Duration) error {
	d := deadline.Add(min(timeout/deadlineSlackPart, deadlineSlack))
	if !hc.deadline.Before(deadline) && !hc.deadline.After(d) {
		return nil
	}
	if err := conn.SetDeadline(d); err != nil {
		return err
	}
	hc.deadline = d
	return nil
}

func (t *transport) host(u *url.URL) *hostConn {
	key := hostKey{u.Scheme, u.Host}
	if key == t.lastKey && t.lastHost != nil {
		return t.lastHost // a VU mostly talks to one host: no hashing
	}
	hc, ok := t.hosts[key]
	if !ok {
		hc = &hostConn{addr: u.Host}
		port := "80"
		if u.Scheme == "https" {
			port = "443"
			hc.tls = t.nw.tlsFor(t.nw.h1TLS, u.Hostname())
		}
		if u.Port() == "" {
			hc.addr = net.JoinHostPort(u.Hostname(), port)
		}
		hc.dial = t.nw.dialAddr(hc.addr)
		hc.tunnel = t.nw.s.Proxy != nil && hc.tls != nil
		if t.nw.absolute(u.Scheme) {
			hc.origin = u.Scheme + "://" + u.Host
		}
		t.hosts[key] = hc
	}
	t.lastKey, t.lastHost = key, hc
	return hc
}

// withoutResolver leaves out of a failed lookup's error the address of the resolver asked: the
// agent's own network, which a debug would show its users.
func withoutResolver(err error) error {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		dns.Server = ""
	}
	return err
}

// dial opens a connection to hc, with TLS for https, within timeout and by deadline.
func (t *transport) dial(hc *hostConn, timeout time.Duration, deadline time.Time) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	if t.local != nil {
		d.LocalAddr = t.local
	}
	c, err := t.targets.Dialer(d).Dial("tcp", hc.dial)
	if err != nil {
		return nil, withoutResolver(err)
	}
	conn, err := t.track(c)
	if err != nil {
		return nil, err
	}
	if hc.tunnel {
		if err := t.nw.connect(conn, hc.addr, deadline); err != nil {
			conn.Close()
			return nil, err
		}
	}
	if hc.tls == nil {
		return conn, nil
	}
	tc := tls.Client(conn, hc.tls)
	if err := tc.SetDeadline(deadline); err != nil {
		tc.Close()
		return nil, err
	}
	if err := tc.Handshake(); err != nil {
		tc.Close()
		return nil, err
	}
	return tc, nil
}

// do sends ex and follows up to ex.maxRedirects redirects. With a jar, each hop takes the
// cookies the previous one set, as a browser does.
func (t *transport) do(ctx context.Context, ex *exchange, jar cookieJar, r *reply) {
	*r = reply{url: ex.url, body: r.body[:0], header: r.header, cookies: r.cookies[:0], redirects: r.redirects[:0]}
	t.decode = ex.decode
	read, written := t.read.Load(), t.written.Load()
	defer func() { r.bytesIn, r.bytesOut = t.read.Load()-read, t.written.Load()-written }()
	defer t.releaseBuf()
	if ex.http2 {
		t.doH2(ctx, ex, jar, r)
		return
	}
	// The request and response are taken for this exchange only: an idle VU holds neither (with
	// their header and body buffers, 1.2 KB, measured by BenchmarkIdleVU).
	t.res = fasthttp.AcquireResponse()
	defer func() {
		fasthttp.ReleaseResponse(t.res)
		t.res = nil
		if t.req != nil {
			fasthttp.ReleaseRequest(t.req)
			t.req = nil
		}
	}()
	u, raw := ex.url, ex.rawURL
	method, body, stream, header := ex.method, ex.body, ex.stream, ex.header
	deadline := ex.deadline
	if deadline.IsZero() {
		deadline = time.Now().Add(ex.timeout)
	}
	for hop := 0; ; hop++ {
		if raw == "" {
			raw = u.String()
		}
		var req *fasthttp.Request
		if hop == 0 && ex.prepared != nil {
			req, t.wire = ex.prepared.req, ex.prepared.wire
		} else {
			if t.req == nil {
				t.req = fasthttp.AcquireRequest()
			}
			req = t.req
			buildRequest(req, raw, method, header, body)
			if stream != nil {
				stream.rewind()
				req.SetBodyStream(stream, int(stream.n))
			}
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
			method, body, stream = http.MethodGet, nil, nil
			header = withoutHeaders(header, "Content-Type", "Content-Length")
		}
		if next.Host != u.Host {
			// Credentials meant for one host are not handed to another.
			header = withoutHeaders(header, "Authorization", "Cookie")
		} else {
			header = withoutHeaders(header, "Cookie")
		}
		if t.traceRedirects {
			r.redirects = append(r.redirects, run.Redirect{Status: r.status, Method: method, URL: next.String()})
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
	// The path goes as the script wrote it: `//`, `..` and `%2F` are the target's to read.
	// (Set once the URI is parsed, which resets it.)
	req.URI().DisablePathNormalizing = true
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
	err := t.roundTrip(t.host(u), req, res, deadline, left, r)
	_ = res.CloseBodyStream()
	if err != nil {
		r.err, r.class = err, classify(err)
		if r.class == metrics.ErrAssertion { // the body did not decode: the status came, and its headers
			r.status = res.StatusCode()
			t.keepHeaders(res, r)
		}
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
	t.keepHeaders(res, r)
	r.class = statusClass(r.status)
}

// keepHeaders copies res's headers into r when the transport keeps them.
func (t *transport) keepHeaders(res *fasthttp.Response, r *reply) {
	if !t.keepHeader {
		return
	}
	if r.header == nil {
		r.header = make(http.Header)
	}
	clear(r.header)
	// The headers the target sent, without the Content-Type fasthttp supplies when none came.
	res.Header.SetNoDefaultContentType(true)
	for k, v := range res.Header.All() {
		r.header.Add(string(k), string(v))
	}
	res.Header.SetNoDefaultContentType(false)
}

// Buffers for a connection's reads and writes, taken for one request at a time: an idle VU
// holds none. A read buffer holds a response's headers whole, so it is large enough for what
// real sites send (long CSPs, many cookies).
var (
	readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 16<<10) }}
	writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4<<10) }}
)

// roundTrip sends req on hc's keep-alive connection, or a new one, and reads the response:
// its headers into resp and its body, up to the cap, into r. A body of stated length within the
// cap is read in place; any other is streamed and drained, so that a VU holds at most bodyCap
// bytes of any body (fasthttp's own client would read it whole, or allocate a stream for every
// response).
func (t *transport) roundTrip(hc *hostConn, req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time, left time.Duration, r *reply) error {
	for attempt := 1; ; attempt++ {
		conn, reused := hc.conn, hc.conn != nil
		hc.conn = nil
		if conn == nil {
			var err error
			if conn, err = t.dial(hc, left, deadline); err != nil {
				return err
			}
			hc.deadline = time.Time{}
		}
		if err := hc.setDeadline(conn, deadline, left); err != nil {
			conn.Close()
			return err
		}
		if t.cut.Load() { // the run ended, perhaps before the deadline moved: cutAll's must stand
			conn.Close()
			return context.Canceled
		}
		headerRead, err := t.exchange(hc, conn, req, resp, r)
		if err == nil {
			// A body that runs until the server closes the connection leaves nothing to reuse.
			if req.ConnectionClose() || resp.ConnectionClose() || resp.Header.ContentLength() == -2 {
				conn.Close()
			} else {
				hc.conn = conn
			}
			return nil
		}
		conn.Close()
		// A streamed body is sent once: what the failed attempt read of it is gone.
		if reused && !headerRead && attempt == 1 && staleConn(req, err) && !req.IsBodyStream() {
			if left = time.Until(deadline); left > 0 {
				continue
			}
		}
		if errors.Is(err, io.EOF) && !headerRead {
			err = fasthttp.ErrConnectionClosed
		}
		return err
	}
}

// exchange writes req on conn and reads the response. headerRead says, on failure, whether the
// response's headers had arrived.
func (t *transport) exchange(hc *hostConn, conn net.Conn, req *fasthttp.Request, resp *fasthttp.Response, r *reply) (headerRead bool, err error) {
	bw := writers.Get().(*bufio.Writer)
	bw.Reset(conn)
	switch {
	case hc.origin != "": // through a proxy, which reads where from the request line
		wire := t.wire
		if wire == nil {
			var b bytes.Buffer
			if _, err = req.WriteTo(&b); err != nil {
				break
			}
			wire = b.Bytes()
		}
		_, err = bw.Write(t.nw.proxyForm(wire, hc.origin))
	case t.wire != nil:
		_, err = bw.Write(t.wire)
	default:
		err = req.Write(bw)
	}
	if err == nil {
		err = bw.Flush()
	}
	bw.Reset(nil)
	writers.Put(bw)
	if err != nil {
		return false, err
	}
	resp.SkipBody = resp.SkipBody || req.Header.IsHead()
	br := readers.Get().(*bufio.Reader)
	br.Reset(conn)
	headerRead, err = t.readResponse(br, resp, r)
	br.Reset(nil)
	readers.Put(br)
	return headerRead, err
}

// readResponse reads a response's headers into resp and its body, up to the cap, into r.
// headerRead says whether the headers were read when it fails.
func (t *transport) readResponse(br *bufio.Reader, resp *fasthttp.Response, r *reply) (headerRead bool, err error) {
	resp.ResetBody()
	lean := false
	if !t.keepHeader && !t.decode { // every header kept, and Content-Encoding, need fasthttp's parser
		if lean, err = readLeanHeader(br, resp, &t.lean); err != nil {
			return false, err
		}
	}
	if !lean {
		if err := resp.Header.Read(br); err != nil {
			return false, err
		}
		if resp.StatusCode() == fasthttp.StatusContinue {
			if err := resp.Header.Read(br); err != nil {
				return false, err
			}
		}
	}
	r.body = r.body[:0]
	if status := resp.StatusCode(); resp.SkipBody || status < 200 || status == http.StatusNoContent || status == http.StatusNotModified {
		return true, nil
	}
	enc := ""
	if t.decode {
		enc = contentEncoding(resp.Header.ContentEncoding())
	}
	if n := resp.Header.ContentLength(); n >= 0 && n <= t.bodyCap {
		resp.StreamBody = false
		if err := resp.ReadBody(br, t.bodyCap); err != nil {
			return true, err
		}
		if enc != "" {
			return true, t.decodeBody(enc, bytes.NewReader(resp.Body()), r)
		}
		r.body = append(r.body, resp.Body()...)
		return true, nil
	}
	// Longer than the cap, chunked, or until the connection closes.
	resp.StreamBody = true
	if err := resp.ReadBody(br, t.bodyCap); err != nil {
		return true, err
	}
	if enc != "" {
		return true, t.decodeBody(enc, resp.BodyStream(), r)
	}
	return true, t.readBody(resp.BodyStream(), r)
}

// readBody keeps the first bodyCap bytes and reads the rest without keeping it: memory per VU
// stays bounded whatever the target sends (the connection counts the bytes).
func (t *transport) readBody(src io.Reader, r *reply) error {
	if src == nil {
		return nil
	}
	for {
		if _, err := t.readOnce(src, r); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// readBuffers are readOnce's, taken for one body: a VU that once streamed a body does not keep
// 32 KB for the rest of the run.
var readBuffers = sync.Pool{New: func() any { return new([32 << 10]byte) }}

// readOnce reads from src once, keeps what fits under the cap in r.body, and says how much it
// read. Its buffer stays taken until releaseBuf.
func (t *transport) readOnce(src io.Reader, r *reply) (int, error) {
	if t.buf == nil {
		t.buf = readBuffers.Get().(*[32 << 10]byte)
	}
	n, err := src.Read(t.buf[:])
	if room := t.bodyCap - len(r.body); n > 0 && room > 0 {
		r.body = append(r.body, t.buf[:min(n, room)]...)
	}
	return n, err
}

// releaseBuf gives back readOnce's buffer, once a body is read.
func (t *transport) releaseBuf() {
	if t.buf != nil {
		readBuffers.Put(t.buf)
		t.buf = nil
	}
}

// doH2 sends through net/http, which speaks HTTP/2 over TLS.
func (t *transport) doH2(ctx context.Context, ex *exchange, jar cookieJar, r *reply) {
	client := t.h2Client(ex.url.Hostname())
	client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > ex.maxRedirects {
			return http.ErrUseLastResponse
		}
		if t.traceRedirects && req.Response != nil {
			r.redirects = append(r.redirects, run.Redirect{Status: req.Response.StatusCode, Method: req.Method, URL: req.URL.String()})
		}
		return nil
	}
	if jar != nil {
		client.Jar = jar.(http.CookieJar)
	} else {
		client.Jar = nil
	}
	ctx, cancel := context.WithTimeout(ctx, ex.timeout)
	defer cancel()
	var body io.Reader = bytes.NewReader(ex.body)
	if ex.stream != nil {
		ex.stream.rewind()
		body = ex.stream
	}
	req, err := http.NewRequestWithContext(ctx, ex.method, ex.rawURL, body)
	if ex.stream != nil && err == nil {
		req.ContentLength = ex.stream.n
		req.GetBody = func() (io.ReadCloser, error) { ex.stream.rewind(); return io.NopCloser(ex.stream), nil }
	}
	if err != nil {
		r.err, r.class = err, metrics.ErrConnect
		return
	}
	for _, h := range ex.header {
		req.Header.Set(h[0], h[1])
	}
	res, err := client.Do(req)
	if err != nil {
		r.err, r.class, r.interrupted = err, classify(err), errors.Is(err, context.Canceled)
		return
	}
	defer res.Body.Close()
	r.status, r.url = res.StatusCode, res.Request.URL
	read := t.readBody
	if enc := contentEncoding([]byte(res.Header.Get("Content-Encoding"))); ex.decode && enc != "" {
		read = func(src io.Reader, r *reply) error { return t.decodeBody(enc, src, r) }
	}
	if err := read(res.Body, r); err != nil {
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

// h2Client is the VU's net/http client for host: one for the hosts that present the script's
// certificate (or none), one for each host with its own.
func (t *transport) h2Client(host string) *http.Client {
	key := t.nw.certKey(host)
	if c := t.h2[key]; c != nil {
		return c
	}
	d := t.targets.Dialer(net.Dialer{LocalAddr: t.local, Timeout: 30 * time.Second})
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, t.nw.s.Dial(addr))
		if err != nil {
			return nil, withoutResolver(err)
		}
		return t.track(c)
	}
	tr := &http.Transport{DialContext: dial, TLSClientConfig: t.nw.tlsFor(t.nw.h2TLS, host), ForceAttemptHTTP2: true,
		MaxIdleConnsPerHost: 1, DisableCompression: true}
	tr.TLSClientConfig.ServerName = "" // net/http names each host itself
	if p := t.nw.s.Proxy; p != nil {
		tr.Proxy = http.ProxyURL(p)
	}
	if t.h2 == nil {
		t.h2 = make(map[string]*http.Client, 1)
	}
	c := &http.Client{Transport: tr}
	t.h2[key] = c
	return c
}

// classify sorts a transport failure: a timeout (the target too slow), a body that did not
// decode (a failed check: the target answered), or else a connection failure (refused, reset,
// closed before answering, TLS).
func classify(err error) metrics.ErrorClass {
	var ne net.Error
	var de *DecodeError
	if errors.As(err, &de) {
		return metrics.ErrAssertion
	}
	if errors.Is(err, fasthttp.ErrTimeout) ||
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
