package record_test

import (
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/demoshop"
	"github.com/barrage-load/barrage/internal/har"
	"github.com/barrage-load/barrage/internal/record"
)

// testBundle is a recording proxy, a client that uses it and trusts its CA, and the CA's folder.
type testBundle struct {
	ca     *record.CA
	caDir  string
	rec    *record.Recorder
	proxy  *httptest.Server
	client *http.Client
	events chan record.Event
}

// setup starts a recording proxy that trusts targets signed by roots (nil: the system's).
func setup(t *testing.T, roots *x509.CertPool) *testBundle {
	t.Helper()
	b := &testBundle{caDir: t.TempDir(), events: make(chan record.Event, 100)}
	var err error
	b.ca, _, err = record.LoadCA(b.caDir)
	require.NoError(t, err)
	b.rec = record.New(record.Options{CA: b.ca, RootCAs: roots, Idle: time.Hour, OnExchange: func(ev record.Event) { b.events <- ev }})
	b.proxy = httptest.NewServer(b.rec)
	t.Cleanup(func() {
		b.rec.Close()
		b.proxy.Close()
	})
	pu, err := url.Parse(b.proxy.URL)
	require.NoError(t, err)
	trust := x509.NewCertPool()
	trust.AddCert(b.ca.Certificate())
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	b.client = &http.Client{Jar: jar, Transport: &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: trust}}}
	t.Cleanup(b.client.CloseIdleConnections)
	return b
}

// do sends a request through the proxy and returns its status and body.
func (b *testBundle) do(t *testing.T, method, u, contentType, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := b.client.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(data)
}

// visitShop logs in to the demo shop at base and buys a product, through the proxy, a page
// mark before each step.
func (b *testBundle) visitShop(t *testing.T, base string) {
	t.Helper()
	status, home := b.do(t, "GET", base+"/", "", "")
	require.Equal(t, http.StatusOK, status)
	csrf := between(home, `name="csrf" value="`, `"`)
	b.rec.MarkPage()
	form := url.Values{"csrf": {csrf}, "email": {"grace@example.test"}, "password": {"hopper-1906"}}.Encode()
	status, account := b.do(t, "POST", base+"/login", "application/x-www-form-urlencoded", form)
	require.Equal(t, http.StatusOK, status, "the login redirects to the account page: %s", account)
	b.rec.MarkPage()
	status, products := b.do(t, "GET", base+"/api/products?q=coffee", "", "")
	require.Equal(t, http.StatusOK, status)
	status, cart := b.do(t, "POST", base+"/api/cart/items", "application/json", `{"product":"`+between(products, `"id":"`, `"`)+`","quantity":1}`)
	require.Equal(t, http.StatusCreated, status)
	b.rec.MarkPage()
	status, _ = b.do(t, "POST", base+"/api/orders", "application/json", `{"cart":"`+between(cart, `"id":"`, `"`)+`"}`)
	require.Equal(t, http.StatusCreated, status)
}

func between(s, from, to string) string {
	_, rest, ok := strings.Cut(s, from)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, to)
	return v
}

// The proxy relays plain http and records each exchange as the browser would export it: pages
// as marked, requests in order, cookies and bodies; converted, the visit's CSRF token, product
// and cart are correlated.
func TestRecordsPlainHTTPIntoPagesAndAScript(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	shop := httptest.NewServer(demoshop.New().Handler())
	t.Cleanup(shop.Close)
	b.visitShop(t, shop.URL)

	l := b.rec.Log()
	require.Len(t, l.Pages, 4)
	var got []string
	for _, e := range l.Entries {
		got = append(got, e.PageRef+" "+e.Request.Method+" "+strings.TrimPrefix(e.Request.URL, shop.URL))
	}
	require.Equal(t, []string{"page_1 GET /", "page_2 POST /login", "page_2 GET /account", "page_3 GET /api/products?q=coffee",
		"page_3 POST /api/cart/items", "page_4 POST /api/orders"}, got)
	login := l.Entries[1]
	require.Equal(t, 303, login.Response.Status)
	require.Equal(t, "/account", login.Response.RedirectURL)
	require.Equal(t, "application/x-www-form-urlencoded", login.Request.PostData.MimeType)
	require.Contains(t, login.Request.PostData.Text, "email=grace%40example.test")
	require.Equal(t, "session", login.Request.Cookies[0].Name, "the cookie the home page set went with the login")
	require.NotEmpty(t, login.Response.Cookies, "and the login set a new one")
	for _, h := range login.Request.Headers {
		require.NotEqual(t, "Proxy-Connection", h.Name, "hop-by-hop headers are not the target's")
	}

	// The HAR goes out and comes back unchanged: the same recording makes the same script.
	data, err := har.Encode(l)
	require.NoError(t, err)
	back, err := har.Decode(data)
	require.NoError(t, err)
	require.Equal(t, l, back)

	res, err := har.Convert(l, har.Options{})
	require.NoError(t, err)
	vars := map[string]string{}
	for _, c := range res.Correlations {
		vars[c.Var] = string(c.Kind) + " " + c.Expr
	}
	require.Equal(t, map[string]string{"csrf": `regex name="csrf" value="([^"]+)"`, "product": "json $.items[0].id", "cart": "json $.id"}, vars)

	for range l.Entries {
		ev := <-b.events
		require.NoError(t, ev.Err)
	}
}

// HTTPS through CONNECT is opened with a certificate for the host that the recording CA signs,
// relayed to the target over its own TLS, and recorded as https.
func TestInterceptsHTTPSThroughConnect(t *testing.T) {
	t.Parallel()
	shop := httptest.NewTLSServer(demoshop.New().Handler())
	t.Cleanup(shop.Close)
	roots := x509.NewCertPool()
	roots.AddCert(shop.Certificate())
	b := setup(t, roots)
	b.visitShop(t, shop.URL)

	l := b.rec.Log()
	require.Len(t, l.Entries, 6)
	for _, e := range l.Entries {
		require.True(t, strings.HasPrefix(e.Request.URL, shop.URL+"/"), e.Request.URL)
	}
	res, err := har.Convert(l, har.Options{})
	require.NoError(t, err)
	require.Len(t, res.Correlations, 3)
	require.Contains(t, string(res.Script), "default: '"+shop.URL+"'")

	// The certificate the client saw is the CA's, for the address it asked for.
	conn, err := net.Dial("tcp", strings.TrimPrefix(b.proxy.URL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	host := strings.TrimPrefix(shop.URL, "https://")
	_, err = io.WriteString(conn, "CONNECT "+host+" HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
	require.NoError(t, err)
	buf := make([]byte, len("HTTP/1.1 200 Connection established\r\n\r\n"))
	_, err = io.ReadFull(conn, buf)
	require.NoError(t, err)
	require.Equal(t, "HTTP/1.1 200 Connection established\r\n\r\n", string(buf))
	trust := x509.NewCertPool()
	trust.AddCert(b.ca.Certificate())
	tc := tls.Client(conn, &tls.Config{RootCAs: trust, ServerName: "127.0.0.1"})
	require.NoError(t, tc.Handshake())
	leaf := tc.ConnectionState().PeerCertificates[0]
	require.Equal(t, "127.0.0.1", leaf.IPAddresses[0].String())
	require.Equal(t, b.ca.Certificate().Subject.CommonName, leaf.Issuer.CommonName)
}

// A client that does not trust the CA gets no answer from the target, and the recording says
// why once.
func TestAClientThatDoesNotTrustTheCAIsToldWhy(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	shop := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(shop.Close)
	pu, err := url.Parse(b.proxy.URL)
	require.NoError(t, err)
	cl := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	_, err = cl.Get(shop.URL)
	require.Error(t, err)
	ev := <-b.events
	require.ErrorContains(t, ev.Err, "does it trust "+b.ca.CertPath)
	require.Empty(t, b.rec.Log().Entries)
}

// The CA is made once, its key private to its owner, and kept: the next recording loads the
// same one, so a browser that trusts it keeps trusting it.
func TestTheCAIsMadeOnceAndKept(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "ca")
	first, created, err := record.LoadCA(dir)
	require.NoError(t, err)
	require.True(t, created)
	fi, err := os.Stat(filepath.Join(dir, record.KeyFile))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	again, created, err := record.LoadCA(dir)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, first.Certificate().Raw, again.Certificate().Raw)
	require.True(t, first.Certificate().IsCA)

	// Leaves for names and addresses verify against it, for their host only.
	pool := x509.NewCertPool()
	pool.AddCert(again.Certificate())
	for _, host := range []string{"shop.example", "127.0.0.1", "::1"} {
		leaf, err := again.Leaf(host)
		require.NoError(t, err)
		_, err = leaf.Leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: host})
		require.NoError(t, err, host)
		_, err = leaf.Leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "other.example"})
		require.Error(t, err)
	}

	require.NoError(t, os.Remove(filepath.Join(dir, record.CertFile)))
	_, _, err = record.LoadCA(dir)
	require.ErrorContains(t, err, "remove", "a key without its certificate is not replaced silently")
}

// A body the target compressed reaches the client as it came, and the HAR holds it decoded, as a
// browser's export does, so that extractors read it.
func TestCompressedBodiesAreRelayedAsTheyCameAndRecordedDecoded(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "application/json")
		zw := gzip.NewWriter(w)
		_, _ = io.WriteString(zw, `{"token":"tk-123456"}`)
		_ = zw.Close()
	}))
	t.Cleanup(target.Close)
	req, err := http.NewRequest("GET", target.URL+"/", nil)
	require.NoError(t, err)
	req.Header.Set("Accept-Encoding", "gzip")
	res, err := b.client.Do(req)
	require.NoError(t, err)
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, "gzip", res.Header.Get("Content-Encoding"))
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	require.NoError(t, err)
	plain, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.JSONEq(t, `{"token":"tk-123456"}`, string(plain))

	e := b.rec.Log().Entries[0]
	require.Equal(t, string(plain), e.Response.Content.Text, "the body as the client read it, byte for byte")
	require.Equal(t, int64(len(raw)), e.Response.BodySize)
}

// A pause with nothing in flight starts a new page, as does a mark; requests that overlap stay
// on one page.
func TestPagesStartAfterAPauseOrAMark(t *testing.T) {
	t.Parallel()
	arrived, release := make(chan struct{}), make(chan struct{})
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(arrived)
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(target.Close)
	ca, _, err := record.LoadCA(t.TempDir())
	require.NoError(t, err)
	rec := record.New(record.Options{CA: ca, Idle: time.Nanosecond})
	proxy := httptest.NewServer(rec)
	t.Cleanup(proxy.Close)
	pu, err := url.Parse(proxy.URL)
	require.NoError(t, err)
	cl := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	get := func(p string) {
		res, err := cl.Get(target.URL + p)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	get("/a") // page 1
	get("/b") // any pause is past an idle of 1ns: page 2
	done := make(chan struct{})
	go func() { // in flight while /c starts: they share page 3
		defer close(done)
		get("/slow")
	}()
	<-arrived // the proxy has begun it
	get("/c")
	close(release)
	<-done
	rec.MarkPage()
	rec.MarkPage() // twice is once
	get("/d")

	pages := map[string]string{}
	for _, e := range rec.Log().Entries {
		pages[strings.TrimPrefix(e.Request.URL, target.URL)] = e.PageRef
	}
	require.Equal(t, map[string]string{"/a": "page_1", "/b": "page_2", "/slow": "page_3", "/c": "page_3", "/d": "page_4"}, pages)
}

// A request for the proxy itself through the proxy would loop: it is refused.
func TestARequestForTheProxyItselfIsRefused(t *testing.T) {
	t.Parallel()
	ca, _, err := record.LoadCA(t.TempDir())
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	rec := record.New(record.Options{CA: ca, Self: ln.Addr().String()})
	srv := &http.Server{Handler: rec, ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	pu, err := url.Parse("http://" + ln.Addr().String())
	require.NoError(t, err)
	cl := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	res, err := cl.Get("http://" + ln.Addr().String() + "/x")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusLoopDetected, res.StatusCode)

	// Asked directly, it hands out its CA certificate.
	res, err = http.Get("http://" + ln.Addr().String() + "/barrage-ca.pem")
	require.NoError(t, err)
	pem, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pem))
}
