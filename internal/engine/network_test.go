package engine_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/engine"
	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/netpolicy"
	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/script"
)

// testCA is a certificate authority of a test's own.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "barrage test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a certificate for cn (a server's names, or a client's) and returns it in PEM with
// its key in PEM.
func (ca *testCA) issue(t *testing.T, cn string, client bool, names ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// tlsSeen is what a TLS target saw of one request.
type tlsSeen struct {
	host, sni, client, local string
	proto                    int
}

// mtlsServer listens on addr (127.0.0.5:0) with a certificate for names, requires a client
// certificate of ca, and records what each request came with.
func mtlsServer(t *testing.T, ca *testCA, addr string, names ...string) (string, func() []tlsSeen) {
	t.Helper()
	certPEM, keyPEM := ca.issue(t, names[0], false, names...)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	var mu sync.Mutex
	var got []tlsSeen
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := tlsSeen{host: r.Host, sni: r.TLS.ServerName, proto: r.ProtoMajor,
			local: r.Context().Value(http.LocalAddrContextKey).(net.Addr).String()}
		if len(r.TLS.PeerCertificates) > 0 {
			s.client = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		mu.Lock()
		got = append(got, s)
		mu.Unlock()
		fmt.Fprint(w, `{"ok":true}`)
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return ln.Addr().String(), func() []tlsSeen {
		mu.Lock()
		defer mu.Unlock()
		return append([]tlsSeen(nil), got...)
	}
}

func writeFiles(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for name, data := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o600))
	}
}

func TestClientCertificatesAndNameOverrides(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	addr, requests := mtlsServer(t, ca, "127.0.0.5:0", "shop.test", "api.test")
	_, port, _ := net.SplitHostPort(addr)
	dir := t.TempDir()
	clientCert, clientKey := ca.issue(t, "load tester", true)
	apiCert, apiKey := ca.issue(t, "api client", true)
	writeFiles(t, dir, map[string][]byte{"certs/ca.pem": ca.pem, "certs/client.pem": clientCert, "certs/client.key": clientKey,
		"certs/api.pem": apiCert, "certs/api.key": apiKey})
	s := load(t, dir, "", `
version: 1
hosts:
  shop.test: 127.0.0.5
  api.test:`+port+`: 127.0.0.5:`+port+`
tls:
  ca: certs/ca.pem
  cert: certs/client.pem
  key: certs/client.key
  hosts:
    api.test: { cert: certs/api.pem, key: certs/api.key }
session:
  groups:
    - name: g
      requests:
        - { name: shop, url: "https://shop.test:`+port+`/", assert: [ { json: "$.ok", equals: true } ] }
        - { name: api, url: "https://api.test:`+port+`/" }
        - { name: h2, url: "https://shop.test:`+port+`/h2", http2: true }
load: { vus: 1, iterations: 2 }
`)
	require.Equal(t, []string{"certs/api.key", "certs/api.pem", "certs/ca.pem", "certs/client.key", "certs/client.pem"}, s.Files())
	res := runScript(t, s, engine.Options{})
	for _, name := range []string{"shop", "api", "h2"} {
		st := stats(t, res, name)
		require.Equal(t, int64(2), st.Requests, name)
		require.Zero(t, st.Failed(), "%s: %v", name, st.Errors)
	}
	got := requests()
	require.Len(t, got, 6)
	for _, g := range got {
		require.Equal(t, "127.0.0.5:"+port, g.local, "the override reached 127.0.0.5")
		require.True(t, strings.HasSuffix(g.host, ".test:"+port), "the Host header names the host: %s", g.host)
		require.Equal(t, strings.TrimSuffix(g.host, ":"+port), g.sni, "SNI names the host")
		want := "load tester"
		if g.sni == "api.test" {
			want = "api client"
		}
		require.Equal(t, want, g.client, "%s presents its certificate", g.sni)
	}
	require.Equal(t, 2, got[2].proto, "http2 went as HTTP/2")

	// Without a client certificate the server refuses the handshake: a connect error.
	s = load(t, dir, "", `
version: 1
hosts: { shop.test: 127.0.0.5 }
tls: { ca: certs/ca.pem }
session:
  groups:
    - name: g
      requests:
        - { name: shop, url: "https://shop.test:`+port+`/" }
load: { vus: 1, iterations: 1 }
`)
	res = runScript(t, s, engine.Options{})
	require.Equal(t, int64(1), stats(t, res, "shop").Errors[metrics.ErrConnect])
}

func TestScriptFilesAreChecked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := newTestCA(t)
	cert, _ := ca.issue(t, "c", true)
	_, otherKey := ca.issue(t, "d", true)
	writeFiles(t, dir, map[string][]byte{"ca.pem": []byte("not a certificate"), "c.pem": cert, "d.key": otherKey})
	path := filepath.Join(dir, "s.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`version: 1
hosts: { "shop.test": "not an address", "http://x": 127.0.0.1 }
tls: { ca: ca.pem, cert: c.pem, key: d.key, hosts: { a.test: { cert: missing.pem, key: ../out.key } } }
proxy: socks5://127.0.0.1:1080
session: { groups: [ { name: g, requests: [ { name: r, url: "http://shop.test/" } ] } ] }
load: { vus: 1, iterations: 1 }
`), 0o644))
	_, err := script.Load(path, script.ParseOptions{})
	require.Error(t, err)
	for _, want := range []string{
		"hosts.shop.test: must be an IP address",
		`hosts["http://x"]: must be a host name`,
		"proxy: must be an http:// proxy URL",
		"tls.hosts.a.test.key: must be a path relative to the script's folder",
		"tls.ca: ca.pem holds no PEM certificate",
		"tls: the certificate and key do not make a pair",
	} {
		require.Contains(t, err.Error(), want)
	}
}

// testProxy is an HTTP proxy: plain requests in absolute form, and CONNECT tunnels. It counts
// what it carried and the credentials it was given.
type testProxy struct {
	mu       sync.Mutex
	plain    []string // absolute URLs of plain requests
	tunnels  []string // CONNECT hosts
	authSeen []string
}

func (p *testProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.authSeen = append(p.authSeen, r.Header.Get("Proxy-Authorization"))
	p.mu.Unlock()
	if r.Method == http.MethodConnect {
		p.mu.Lock()
		p.tunnels = append(p.tunnels, r.Host)
		p.mu.Unlock()
		up, err := net.Dial("tcp", r.Host)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			up.Close()
			return
		}
		go func() { _, _ = io.Copy(up, brw); up.Close() }()
		_, _ = io.Copy(c, up)
		c.Close()
		return
	}
	p.mu.Lock()
	p.plain = append(p.plain, r.RequestURI)
	p.mu.Unlock()
	out, err := http.NewRequestWithContext(r.Context(), r.Method, r.RequestURI, r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out.Header = r.Header.Clone()
	out.Header.Del("Proxy-Authorization")
	res, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	for k, v := range res.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(res.StatusCode)
	_, _ = io.Copy(w, res.Body)
}

func TestAProxySeesTheTraffic(t *testing.T) {
	t.Parallel()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "plain "+r.URL.Path) }))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "secure "+r.URL.Path) }))
	defer secure.Close()
	px := &testProxy{}
	proxy := httptest.NewServer(px)
	defer proxy.Close()
	s := parse(t, plain.URL, `
version: 1
proxy: http://tester:s3cret@`+strings.TrimPrefix(proxy.URL, "http://")+`
session:
  groups:
    - name: g
      requests:
        - { name: plain, url: "${target}/a", assert: [ { body_contains: plain /a } ] }
        - { name: secure, url: "`+secure.URL+`/b", assert: [ { body_contains: secure /b } ] }
        - { name: secure h2, url: "`+secure.URL+`/c", http2: true, assert: [ { body_contains: secure /c } ] }
load: { vus: 1, iterations: 3 }
`)
	res := runScript(t, s, engine.Options{Insecure: true})
	for _, name := range []string{"plain", "secure", "secure h2"} {
		st := stats(t, res, name)
		require.Equal(t, int64(3), st.Requests, name)
		require.Zero(t, st.Failed(), "%s: %v", name, st.Errors)
	}
	px.mu.Lock()
	defer px.mu.Unlock()
	require.Equal(t, []string{plain.URL + "/a", plain.URL + "/a", plain.URL + "/a"}, px.plain, "plain requests go to the proxy in absolute form")
	secureHost := strings.TrimPrefix(secure.URL, "https://")
	require.Equal(t, []string{secureHost, secureHost}, px.tunnels, "https goes through one kept tunnel per client (HTTP/1.1 and HTTP/2)")
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("tester:s3cret"))
	for _, a := range px.authSeen {
		require.Equal(t, basic, a)
	}
}

func TestSharedAgentsRefuseOverridesAndProxies(t *testing.T) {
	t.Parallel()
	s := parse(t, "http://127.0.0.1:9", `
version: 1
hosts: { shop.test: 127.0.0.5 }
session: { groups: [ { name: g, requests: [ { name: r, url: "http://shop.test/" } ] } ] }
load: { vus: 1, iterations: 1 }
`)
	_, err := engine.Run(context.Background(), s, engine.Options{Targets: &netpolicy.Policy{Destinations: map[string]netip.Addr{}}})
	require.ErrorContains(t, err, "hosts and proxy are for your own agents")
}

// A proxy that answers CONNECT with headers without end gets no further than 64 KiB of them.
func TestAProxysEndlessAnswerIsCut(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\n"))
		line := []byte("X-Padding: " + strings.Repeat("y", 1000) + "\r\n")
		for i := 0; i < 100_000; i++ {
			if _, err := c.Write(line); err != nil {
				return
			}
		}
	}()
	s := parse(t, "https://shop.test", `
version: 1
proxy: http://`+ln.Addr().String()+`
session: { groups: [ { name: g, requests: [ { name: r, url: "${target}/", timeout: 10s } ] } ] }
load: { vus: 1, iterations: 1 }
`)
	var ev run.TraceEvent
	require.NoError(t, engine.Debug(context.Background(), s, engine.Options{Trace: func(e run.TraceEvent) { ev = e }}))
	require.ErrorContains(t, ev.Err, "proxy:")
}
