// Package record is `barrage record`'s recording proxy: an HTTP forward proxy that passes each
// request to its target and keeps the exchange as a HAR entry. HTTPS comes through CONNECT and
// is opened with a certificate for the host that the recording's own CA signs, so that a client
// trusting that CA talks to the proxy, and the proxy to the target. Exchanges are grouped into
// pages as a browser's network panel groups them: a new page when the person says so, or after
// a pause. The recording is a har.Log, which har.Convert turns into a script, as it does a
// browser's export.
package record

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/barrage-load/barrage/internal/har"
)

// Options configure a Recorder.
type Options struct {
	// CA signs the certificates of the hosts opened through CONNECT.
	CA *CA
	// Idle is the pause after which the next request starts a new page (har.DefaultIdle
	// when 0).
	Idle time.Duration
	// RootCAs are the certificates trusted for targets; nil trusts the system's.
	RootCAs *x509.CertPool
	// Insecure skips the check of targets' certificates.
	Insecure bool
	// Self is the proxy's own address (host:port): a request for it through the proxy would
	// loop.
	Self string
	// Version names the recorder in the HAR's creator.
	Version string
	// OnExchange, when set, is told of each exchange recorded, and of each one that failed.
	OnExchange func(Event)
}

// Event is an exchange the proxy relayed, for a live account of the recording.
type Event struct {
	// Count is how many exchanges are recorded so far; Page is the page this one is on, from 1.
	Count, Page int
	Method      string
	URL         string
	Status      int
	// Err is why the exchange failed (nothing recorded), or why a client's TLS handshake did.
	Err error
}

// maxBody bounds a body the proxy relays and keeps. Recording is of pages and API calls; a
// larger download is refused rather than held in memory.
const maxBody = 64 << 20

// Recorder is the recording proxy, an http.Handler for a forward proxy's listener.
type Recorder struct {
	opts      Options
	transport *http.Transport

	mu       sync.Mutex
	pages    []har.Page
	entries  []recorded
	seq      int
	mark     bool
	inflight int
	lastEnd  time.Time
	tunnels  map[net.Conn]struct{}
	wg       sync.WaitGroup
	closed   bool
}

// recorded is an entry with the order its request came in.
type recorded struct {
	seq   int
	entry har.Entry
}

// New returns a Recorder.
func New(opts Options) *Recorder {
	if opts.Idle <= 0 {
		opts.Idle = har.DefaultIdle
	}
	tr := &http.Transport{
		// Never through another proxy from the environment: the recording is of the target.
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       &tls.Config{RootCAs: opts.RootCAs, InsecureSkipVerify: opts.Insecure}, //nolint:gosec // --insecure asks for it
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   15 * time.Second,
		ResponseHeaderTimeout: 5 * time.Minute,
		// The client asked for the encodings it reads; the proxy passes the body on as it came.
		DisableCompression: true,
	}
	return &Recorder{opts: opts, transport: tr, tunnels: map[net.Conn]struct{}{}}
}

// MarkPage makes the next request start a new page, as when the person recording moves on, and
// returns that page's number.
func (r *Recorder) MarkPage() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pages) > 0 {
		r.mark = true
		return len(r.pages) + 1
	}
	return 1
}

// Count is how many exchanges are recorded.
func (r *Recorder) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.entries)
}

// Log is the recording so far: its pages, and its entries in the order their requests came.
func (r *Recorder) Log() *har.Log {
	r.mu.Lock()
	defer r.mu.Unlock()
	entries := slices.Clone(r.entries)
	slices.SortFunc(entries, func(a, b recorded) int { return a.seq - b.seq })
	l := &har.Log{Version: "1.2", Creator: har.Creator{Name: "barrage record", Version: r.opts.Version},
		Pages: slices.Clone(r.pages), Entries: make([]har.Entry, 0, len(entries))}
	for _, e := range entries {
		l.Entries = append(l.Entries, e.entry)
	}
	return l
}

// Wait waits until the exchanges in flight are over, or ctx is done.
func (r *Recorder) Wait(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// Close ends the tunnels still open and the connections to targets; the proxy relays nothing
// after it.
func (r *Recorder) Close() {
	r.mu.Lock()
	r.closed = true
	for c := range r.tunnels {
		_ = c.Close()
	}
	r.mu.Unlock()
	r.transport.CloseIdleConnections()
}

// ServeHTTP relays a proxied request: plain http in absolute form, https through CONNECT. The
// proxy's own address serves its CA certificate at /barrage-ca.pem, for a phone or a browser to
// fetch and trust.
func (r *Recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	switch {
	case req.Method == http.MethodConnect:
		r.tunnel(w, req)
	case req.URL.IsAbs() && req.URL.Scheme == "http":
		r.relay(w, req, req.URL)
	case !req.URL.IsAbs() && req.URL.Path == "/barrage-ca.pem" && r.opts.CA != nil:
		w.Header().Set("Content-Type", "application/x-x509-ca-cert")
		_, _ = w.Write(certPEM(r.opts.CA))
	default:
		http.Error(w, "This is barrage record, a recording proxy: set it as your browser's or client's HTTP and HTTPS proxy.\n"+
			"Its CA certificate, to trust for HTTPS, is at /barrage-ca.pem.", http.StatusBadRequest)
	}
}

// tunnel answers a CONNECT, then opens the client's TLS with a certificate for the host and
// relays the requests that come through it.
func (r *Recorder) tunnel(w http.ResponseWriter, req *http.Request) {
	authority := req.Host
	host, port, err := net.SplitHostPort(authority)
	if err != nil {
		host, port, authority = authority, "443", net.JoinHostPort(authority, "443")
	}
	if r.loops(authority) {
		http.Error(w, "barrage record: that is the proxy itself", http.StatusLoopDetected)
		return
	}
	if r.opts.CA == nil {
		http.Error(w, "barrage record: no CA to open https with", http.StatusNotImplemented)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "barrage record: cannot take over the connection", http.StatusInternalServerError)
		return
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		return
	}
	if !r.track(conn) {
		conn.Close()
		return
	}
	defer r.untrack(conn)
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		conn.Close()
		return
	}
	// Bytes the client sent after CONNECT, before our answer, are the start of its TLS.
	var raw net.Conn = conn
	if n := rw.Reader.Buffered(); n > 0 {
		b, _ := rw.Reader.Peek(n)
		raw = &prefixConn{Conn: conn, r: io.MultiReader(bytes.NewReader(slices.Clone(b)), conn)}
	}
	tconn := tls.Server(raw, &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			name := host
			if hello.ServerName != "" {
				name = hello.ServerName
			}
			return r.opts.CA.Leaf(name)
		},
	})
	ctx, cancel := context.WithTimeout(req.Context(), 15*time.Second)
	err = tconn.HandshakeContext(ctx)
	cancel()
	if err != nil {
		r.notify(Event{URL: "https://" + authority, Err: fmt.Errorf("the client's TLS handshake failed (does it trust %s?): %w", r.opts.CA.CertPath, err)})
		conn.Close()
		return
	}
	origin := "https://" + host
	if port != "443" {
		origin = "https://" + net.JoinHostPort(host, port)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, in *http.Request) {
			target, err := url.Parse(origin + in.URL.RequestURI())
			if err != nil {
				http.Error(w, "barrage record: "+err.Error(), http.StatusBadRequest)
				return
			}
			r.relay(w, in, target)
		}),
		ReadHeaderTimeout: time.Minute,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	_ = srv.Serve(&oneConnListener{conn: tconn, done: make(chan struct{})})
}

// loops reports whether authority is the proxy itself.
func (r *Recorder) loops(authority string) bool {
	if r.opts.Self == "" {
		return false
	}
	if authority == r.opts.Self {
		return true
	}
	h, p, err := net.SplitHostPort(authority)
	sh, sp, serr := net.SplitHostPort(r.opts.Self)
	if err != nil || serr != nil || p != sp {
		return false
	}
	if h == sh || h == "localhost" {
		return true
	}
	ip, sip := net.ParseIP(h), net.ParseIP(sh)
	return ip != nil && sip != nil && (ip.Equal(sip) || sip.IsUnspecified() && ip.IsLoopback())
}

func (r *Recorder) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.tunnels[c] = struct{}{}
	return true
}

func (r *Recorder) untrack(c net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.tunnels, c)
}

// hopHeaders are the headers of one connection, never passed on.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func endToEnd(h http.Header) http.Header {
	out := h.Clone()
	for _, f := range h.Values("Connection") {
		for _, name := range strings.Split(f, ",") {
			out.Del(strings.TrimSpace(name))
		}
	}
	for _, name := range hopHeaders {
		out.Del(name)
	}
	return out
}

// relay sends a request to target, passes the answer back, and records the exchange.
func (r *Recorder) relay(w http.ResponseWriter, in *http.Request, target *url.URL) {
	if r.loops(hostPort(target)) {
		http.Error(w, "barrage record: that is the proxy itself", http.StatusLoopDetected)
		return
	}
	if strings.EqualFold(in.Header.Get("Upgrade"), "websocket") {
		http.Error(w, "barrage record: WebSocket is not relayed (a script's websocket request is written by hand)", http.StatusNotImplemented)
		return
	}
	start := time.Now()
	page, seq, ok := r.begin(start, target)
	if !ok {
		http.Error(w, "barrage record: the recording is over", http.StatusServiceUnavailable)
		return
	}
	defer r.end()
	reqBody, err := io.ReadAll(io.LimitReader(in.Body, maxBody+1))
	if err != nil || len(reqBody) > maxBody {
		http.Error(w, fmt.Sprintf("barrage record: the request body could not be read whole (at most %d MiB)", maxBody>>20), http.StatusRequestEntityTooLarge)
		return
	}
	out, err := http.NewRequestWithContext(in.Context(), in.Method, target.String(), bytes.NewReader(reqBody))
	if err != nil {
		http.Error(w, "barrage record: "+err.Error(), http.StatusBadRequest)
		return
	}
	out.Header = endToEnd(in.Header)
	out.Host = in.Host
	if len(reqBody) == 0 && in.ContentLength <= 0 {
		out.Body, out.ContentLength = http.NoBody, 0
	}
	res, err := r.transport.RoundTrip(out)
	if err != nil {
		r.notify(Event{Page: page, Method: in.Method, URL: target.String(), Err: err})
		http.Error(w, "barrage record: "+err.Error(), http.StatusBadGateway)
		return
	}
	waited := time.Now()
	defer res.Body.Close()
	resBody, err := io.ReadAll(io.LimitReader(res.Body, maxBody+1))
	if err != nil || len(resBody) > maxBody {
		r.notify(Event{Page: page, Method: in.Method, URL: target.String(), Err: fmt.Errorf("the response body could not be read whole (at most %d MiB): %v", maxBody>>20, err)})
		http.Error(w, "barrage record: the response body could not be read whole", http.StatusBadGateway)
		return
	}
	done := time.Now()
	for k, vs := range endToEnd(res.Header) {
		w.Header()[k] = vs
	}
	w.WriteHeader(res.StatusCode)
	_, _ = w.Write(resBody)

	e := entry(in, target, reqBody, res, resBody, start, waited, done)
	e.PageRef = pageID(page)
	n := r.add(seq, e)
	r.notify(Event{Count: n, Page: page, Method: in.Method, URL: target.String(), Status: res.StatusCode})
}

func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

func pageID(n int) string { return "page_" + strconv.Itoa(n) }

// begin notes an exchange starting at start and returns its page: a new one when the person
// asked for one, or after a pause with nothing in flight.
func (r *Recorder) begin(start time.Time, target *url.URL) (page, seq int, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, 0, false
	}
	if len(r.pages) == 0 || r.mark || r.inflight == 0 && start.Sub(r.lastEnd) > r.opts.Idle {
		r.pages = append(r.pages, har.Page{StartedDateTime: start.Format(timeFormat), ID: pageID(len(r.pages) + 1), Title: target.String()})
		r.mark = false
	}
	r.inflight++
	r.wg.Add(1)
	r.seq++
	return len(r.pages), r.seq, true
}

func (r *Recorder) end() {
	r.mu.Lock()
	r.inflight--
	r.lastEnd = time.Now()
	r.mu.Unlock()
	r.wg.Done()
}

func (r *Recorder) add(seq int, e har.Entry) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, recorded{seq: seq, entry: e})
	return len(r.entries)
}

func (r *Recorder) notify(ev Event) {
	if r.opts.OnExchange != nil {
		r.opts.OnExchange(ev)
	}
}

// timeFormat is HAR's ISO 8601 with microseconds: requests a client sends within the same
// millisecond keep their order.
const timeFormat = "2006-01-02T15:04:05.000000Z07:00"

// entry is an exchange as HAR keeps it: headers in name order (HTTP does not keep theirs), the
// response's body decoded from its Content-Encoding, as a browser's export holds it.
func entry(in *http.Request, target *url.URL, reqBody []byte, res *http.Response, resBody []byte, start, waited, done time.Time) har.Entry {
	ms := func(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }
	reqHeaders := []har.NameValue{{Name: "Host", Value: in.Host}}
	reqHeaders = append(reqHeaders, nameValues(endToEnd(in.Header))...)
	e := har.Entry{
		StartedDateTime: start.Format(timeFormat),
		Time:            ms(done.Sub(start)),
		Request: har.Request{
			Method: in.Method, URL: target.String(), HTTPVersion: in.Proto,
			Cookies: []har.Cookie{}, Headers: reqHeaders, QueryString: []har.NameValue{},
			HeadersSize: -1, BodySize: int64(len(reqBody)),
		},
		Response: har.Response{
			Status: res.StatusCode, StatusText: http.StatusText(res.StatusCode), HTTPVersion: res.Proto,
			Cookies: []har.Cookie{}, Headers: nameValues(res.Header), RedirectURL: res.Header.Get("Location"),
			HeadersSize: -1, BodySize: int64(len(resBody)),
		},
		Timings: har.Timings{Blocked: -1, DNS: -1, Connect: -1, SSL: -1, Send: 0, Wait: ms(waited.Sub(start)), Receive: ms(done.Sub(waited))},
	}
	for _, c := range in.Cookies() {
		e.Request.Cookies = append(e.Request.Cookies, har.Cookie{Name: c.Name, Value: c.Value})
	}
	for k, vs := range target.Query() {
		for _, v := range vs {
			e.Request.QueryString = append(e.Request.QueryString, har.NameValue{Name: k, Value: v})
		}
	}
	slices.SortStableFunc(e.Request.QueryString, func(a, b har.NameValue) int { return strings.Compare(a.Name, b.Name) })
	if len(reqBody) > 0 {
		text, enc := har.BodyText(reqBody)
		e.Request.PostData = &har.PostData{MimeType: in.Header.Get("Content-Type"), Text: text, Encoding: enc}
	}
	for _, c := range res.Cookies() {
		e.Response.Cookies = append(e.Response.Cookies, har.Cookie{Name: c.Name, Value: c.Value, Path: c.Path, Domain: c.Domain,
			HTTPOnly: c.HttpOnly, Secure: c.Secure})
	}
	body := resBody
	if enc := res.Header.Get("Content-Encoding"); enc != "" {
		if decoded, err := decode(enc, resBody); err == nil {
			body = decoded
			e.Response.Content.Compression = int64(len(decoded) - len(resBody))
		}
	}
	e.Response.Content.Size = int64(len(body))
	e.Response.Content.MimeType = res.Header.Get("Content-Type")
	e.Response.Content.Text, e.Response.Content.Encoding = har.BodyText(body)
	return e
}

// nameValues lists a header's fields in name order, each value in the order it came.
func nameValues(h http.Header) []har.NameValue {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	out := []har.NameValue{}
	for _, k := range names {
		for _, v := range h[k] {
			out = append(out, har.NameValue{Name: k, Value: v})
		}
	}
	return out
}

// oneConnListener hands out one connection, then waits until it is closed: it lets an
// http.Server serve the requests of one intercepted tunnel.
type oneConnListener struct {
	conn net.Conn
	once sync.Once
	done chan struct{}
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	var c net.Conn
	l.once.Do(func() { c = &notifyConn{Conn: l.conn, done: l.done} })
	if c != nil {
		return c, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error   { return nil }
func (l *oneConnListener) Addr() net.Addr { return l.conn.LocalAddr() }

// notifyConn closes done when it is closed.
type notifyConn struct {
	net.Conn
	once sync.Once
	done chan struct{}
}

func (c *notifyConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { close(c.done) })
	return err
}

// prefixConn reads what was buffered before the connection itself.
type prefixConn struct {
	net.Conn
	r io.Reader
}

func (c *prefixConn) Read(p []byte) (int, error) { return c.r.Read(p) }
