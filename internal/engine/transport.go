package engine

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
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
	http2        bool
	maxRedirects int
}

// reply is what came back. Its body is the first bodyCap bytes only; BytesIn counts all of it.
type reply struct {
	status   int
	header   http.Header // only when the script reads headers or cookies (see transport.keepHeader)
	body     []byte
	bytesIn  int64
	bytesOut int64
	url      *url.URL // after redirects
	err      error
	class    metrics.ErrorClass
}

// transport sends a VU's requests: HTTP/1.1 (and TLS) through fasthttp, which costs about half
// the CPU of net/http per request; HTTP/2 through net/http when a request asks for it. Each VU
// has its own, so that connections, source addresses and cookies are per VU, like the users it
// stands for.
type transport struct {
	local      *net.TCPAddr // source address, or nil
	tlsConfig  *tls.Config
	bodyCap    int
	keepHeader bool
	hosts      map[hostKey]*fasthttp.HostClient
	h2         *http.Client
	req        *fasthttp.Request
	res        *fasthttp.Response
	buf        []byte
}

func newTransport(local net.IP, insecure bool, bodyCap int, keepHeader bool) *transport {
	t := &transport{
		bodyCap:    bodyCap,
		keepHeader: keepHeader,
		hosts:      make(map[hostKey]*fasthttp.HostClient, 1),
		tlsConfig:  &tls.Config{InsecureSkipVerify: insecure}, //nolint:gosec // only when the script asks for it
		req:        &fasthttp.Request{},
		res:        &fasthttp.Response{},
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

// hostKey names a connection pool; a struct rather than a joined string, so that finding the
// pool for a request allocates nothing.
type hostKey struct{ scheme, host string }

func (t *transport) host(u *url.URL) *fasthttp.HostClient {
	key := hostKey{u.Scheme, u.Host}
	if hc, ok := t.hosts[key]; ok {
		return hc
	}
	addr := u.Host
	if u.Port() == "" {
		if u.Scheme == "https" {
			addr += ":443"
		} else {
			addr += ":80"
		}
	}
	dialer := &fasthttp.TCPDialer{LocalAddr: t.local, Concurrency: 0}
	hc := &fasthttp.HostClient{
		Addr:                          addr,
		IsTLS:                         u.Scheme == "https",
		TLSConfig:                     t.tlsConfig,
		DialTimeout:                   dialer.DialTimeout,
		MaxConns:                      1 << 10,
		StreamResponseBody:            true,
		DisableHeaderNamesNormalizing: true,
		NoDefaultUserAgentHeader:      true,
		MaxIdemponentCallAttempts:     1, // a retry would hide a failure from the numbers
	}
	t.hosts[key] = hc
	return hc
}

// do sends ex and follows up to ex.maxRedirects redirects.
func (t *transport) do(ctx context.Context, ex *exchange, r *reply) {
	*r = reply{url: ex.url, body: r.body[:0], header: r.header}
	if ex.http2 {
		t.doH2(ctx, ex, r)
		return
	}
	u, raw := ex.url, ex.rawURL
	method, body := ex.method, ex.body
	deadline := time.Now().Add(ex.timeout)
	for hop := 0; ; hop++ {
		if raw == "" {
			raw = u.String()
		}
		t.send(u, raw, method, ex.header, body, deadline, r)
		if r.err != nil || hop >= ex.maxRedirects || !isRedirect(r.status) {
			return
		}
		loc := t.res.Header.Peek("Location")
		next, err := u.Parse(string(loc))
		if len(loc) == 0 || err != nil {
			return
		}
		u, r.url, raw = next, next, ""
		if r.status == http.StatusSeeOther || ((r.status == http.StatusMovedPermanently || r.status == http.StatusFound) && method == http.MethodPost) {
			method, body = http.MethodGet, nil
		}
	}
}

func isRedirect(status int) bool {
	switch status {
	case 301, 302, 303, 307, 308:
		return true
	}
	return false
}

func (t *transport) send(u *url.URL, rawURL, method string, header [][2]string, body []byte, deadline time.Time, r *reply) {
	req, res := t.req, t.res
	req.Reset()
	res.Reset()
	req.Header.DisableNormalizing()
	req.Header.SetMethod(method)
	req.SetRequestURI(rawURL)
	for _, h := range header {
		req.Header.Set(h[0], h[1])
	}
	if body != nil {
		req.SetBodyRaw(body)
	}
	err := t.host(u).DoDeadline(req, res, deadline)
	r.bytesOut += int64(len(req.Header.Header()) + len(body))
	if err != nil {
		r.err, r.class = err, classify(err)
		return
	}
	r.status = res.StatusCode()
	r.bytesIn += int64(len(res.Header.Header()))
	r.body = r.body[:0]
	var n int64
	if stream := res.BodyStream(); stream != nil {
		n, err = t.readBody(stream, r)
	} else { // the whole body was small enough to come with the headers
		body := res.Body()
		n = int64(len(body))
		r.body = append(r.body, body[:min(len(body), t.bodyCap)]...)
	}
	r.bytesIn += n
	_ = res.CloseBodyStream()
	if err != nil {
		r.err, r.class = err, classify(err)
		return
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

// readBody keeps the first bodyCap bytes and counts the rest without keeping it: memory per VU
// stays bounded whatever the target sends.
func (t *transport) readBody(src io.Reader, r *reply) (int64, error) {
	if src == nil {
		return 0, nil
	}
	if cap(t.buf) < 32<<10 {
		t.buf = make([]byte, 32<<10)
	}
	var total int64
	for {
		n, err := src.Read(t.buf[:cap(t.buf)])
		if n > 0 {
			total += int64(n)
			if room := t.bodyCap - len(r.body); room > 0 {
				r.body = append(r.body, t.buf[:min(n, room)]...)
			}
		}
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// doH2 sends through net/http, which speaks HTTP/2 over TLS.
func (t *transport) doH2(ctx context.Context, ex *exchange, r *reply) {
	if t.h2 == nil {
		d := &net.Dialer{LocalAddr: t.local, Timeout: 30 * time.Second}
		t.h2 = &http.Client{
			Transport: &http.Transport{DialContext: d.DialContext, TLSClientConfig: t.tlsConfig, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 1},
			CheckRedirect: func(req *http.Request, via []*http.Request) error {
				if len(via) > ex.maxRedirects {
					return http.ErrUseLastResponse
				}
				return nil
			},
		}
	}
	ctx, cancel := context.WithTimeout(ctx, ex.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, ex.method, ex.url.String(), bytes.NewReader(ex.body))
	if err != nil {
		r.err, r.class = err, metrics.ErrConnect
		return
	}
	for _, h := range ex.header {
		req.Header.Set(h[0], h[1])
	}
	r.bytesOut = int64(len(ex.body))
	res, err := t.h2.Do(req)
	if err != nil {
		r.err, r.class = err, classify(err)
		return
	}
	defer res.Body.Close()
	r.status, r.url = res.StatusCode, res.Request.URL
	n, err := t.readBody(res.Body, r)
	r.bytesIn = n
	if err != nil {
		r.err, r.class = err, classify(err)
		return
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
