package engine_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/engine"
	"github.com/barrage-load/barrage/internal/metrics"
)

// A target that never answers cannot hold the run: at the end of the graceful stop the VUs'
// connections are cut, whatever the requests' own timeout, and the cut requests are not counted
// as the target's timeouts.
func TestHangingTargetIsCutAtTheEndOfTheGracefulStop(t *testing.T) {
	t.Parallel()
	srv := hangingServer(t)
	s := parse(t, srv.URL, `
version: 1
name: hang
session:
  groups:
    - name: g
      requests:
        - { name: r, url: "${target}/", timeout: 30s }
load:
  vus: 3
  duration: 1s
  graceful_stop: 300ms
`)
	res := runScript(t, s, engine.Options{})
	require.Less(t, res.Elapsed, 30*time.Second, "cut before the requests' own timeout")
	require.EqualValues(t, 3, res.Interrupted)
	st, ok := res.Total.Labels[metrics.RequestKey("r")]
	require.True(t, !ok || st.Errors[metrics.ErrTimeout] == 0, "cut requests are not the target's timeouts")
}

// A cookie set by a redirecting response reaches the redirect's target and later requests.
func TestCookiesSurviveRedirects(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	mux := http.NewServeMux()
	mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: "abc", Path: "/"})
		http.Redirect(w, r, "/home", http.StatusFound)
	})
	mux.HandleFunc("/home", func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie("sid")
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			got = append(got, r.Method+" none")
			return
		}
		got = append(got, r.Method+" "+c.Value)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
name: redirect cookies
session:
  cookies: true
  groups:
    - name: g
      requests:
        - { name: login, method: POST, url: "${target}/login", body: { form: { user: a } }, redirects: 1 }
        - { name: home, url: "${target}/home" }
load:
  vus: 1
  iterations: 1
`)
	res := runScript(t, s, engine.Options{})
	mu.Lock() // the handlers' writes: the race detector sees no order in raw socket I/O
	defer mu.Unlock()
	require.Zero(t, stats(t, res, "login").Failed())
	require.Equal(t, []string{"GET abc", "GET abc"}, got, "the 302 turned the POST into a GET that carried the cookie")
}

// HTTP/2 and HTTP/1.1 requests to one TLS host live side by side in one VU.
func TestHTTP2AndHTTP1ToTheSameHost(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
name: protocols
session:
  groups:
    - name: g
      requests:
        - { name: h2, url: "${target}/", http2: true, assert: [ { body_contains: "HTTP/2.0" } ] }
        - { name: h1, url: "${target}/", assert: [ { body_contains: "HTTP/1.1" } ] }
load:
  vus: 1
  iterations: 3
`)
	res := runScript(t, s, engine.Options{Insecure: true})
	require.Zero(t, stats(t, res, "h2").Failed())
	require.Zero(t, stats(t, res, "h1").Failed())
}

// Large response headers and lower-case header names, as some proxies send, are read like any.
func TestLargeAndLowercaseHeaders(t *testing.T) {
	t.Parallel()
	target := rawServer(t, func(c net.Conn, br *bufio.Reader) bool {
		req, err := http.ReadRequest(br)
		if err != nil {
			return false
		}
		if req.URL.Path == "/a" {
			fmt.Fprintf(c, "HTTP/1.1 302 Found\r\nlocation: /b\r\ncontent-length: 0\r\n\r\n")
			return true
		}
		big := strings.Repeat("x", 10000)
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nx-policy: %s\r\ncontent-length: 2\r\n\r\nok", big)
		return true
	})
	s := parse(t, target, `
version: 1
name: headers
session:
  groups:
    - name: g
      requests:
        - { name: r, url: "${target}/a", redirects: 1, assert: [ { status: 200 }, { body_contains: ok } ] }
load:
  vus: 1
  iterations: 2
`)
	res := runScript(t, s, engine.Options{})
	require.Zero(t, stats(t, res, "r").Failed())
}

// A request that always sends the same bytes is built once per VU; the requests rendered around
// it must not change what it sends.
func TestStaticRequestsKeepTheirBytes(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	bodies := map[string]map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 64)
		n, _ := r.Body.Read(b)
		mu.Lock()
		if bodies[r.URL.Path] == nil {
			bodies[r.URL.Path] = map[string]int{}
		}
		bodies[r.URL.Path][string(b[:n])+"|"+r.Header.Get("X-T")]++
		mu.Unlock()
		fmt.Fprint(w, "v-0123456789")
	}))
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
name: static
session:
  cookies: false
  groups:
    - name: g
      requests:
        - { name: static, method: POST, url: "${target}/s", headers: { X-T: fixed }, body: { raw: "static-body" },
            extract: [ { var: v, regex: "(v-[0-9]+)" } ] }
        - { name: dynamic, method: POST, url: "${target}/d", headers: { X-T: "${v}" }, body: { raw: "dyn-${v}-${v}" } }
load:
  vus: 2
  iterations: 20
`)
	res := runScript(t, s, engine.Options{})
	mu.Lock() // the handlers' writes: the race detector sees no order in raw socket I/O
	defer mu.Unlock()
	require.Zero(t, stats(t, res, "static").Failed())
	require.Equal(t, map[string]int{"static-body|fixed": 20}, bodies["/s"])
	require.Equal(t, map[string]int{"dyn-v-0123456789-v-0123456789|v-0123456789": 20}, bodies["/d"])
}

// A server that closes idle keep-alive connections sooner than the VUs' think time: the next
// request finds its connection closed, is sent again on a new one, and succeeds, as in a
// browser. The stale connection is not the target's failure.
func TestStaleKeepAliveConnectionsAreNotErrors(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Config.IdleTimeout = 100 * time.Millisecond
	srv.Start()
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
name: stale
session:
  groups:
    - name: g
      requests:
        - { name: r, url: "${target}/", think: { fixed: 300ms } }
load:
  vus: 2
  iterations: 8
`)
	res := runScript(t, s, engine.Options{})
	require.Zero(t, stats(t, res, "r").Failed())
	require.EqualValues(t, 8, stats(t, res, "r").Requests)
}

// Every way an HTTP/1.1 response can end its body, on one keep-alive connection after another:
// a HEAD answer and a 204 and a 304 carry none whatever their Content-Length, a chunked body
// ends with its trailer, a 100 Continue precedes the real answer, and a body without a length
// runs until the server closes the connection. Each is read to its true end, so the next
// request on the connection finds its own response.
func TestEveryKindOfBodyEndsWhereHTTPSays(t *testing.T) {
	t.Parallel()
	answers := map[string]string{
		"HEAD /head":       "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n",
		"GET /empty":       "HTTP/1.1 204 No Content\r\n\r\n",
		"GET /same":        "HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\n",
		"GET /chunked":     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\n",
		"GET /continue":    "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\ncontinued",
		"GET /fixed":       "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfixed",
		"GET /until-close": "HTTP/1.1 200 OK\r\n\r\nuntil the connection closes",
	}
	target := rawServer(t, func(c net.Conn, br *bufio.Reader) bool {
		line, err := br.ReadString('\n')
		if err != nil {
			return false
		}
		for {
			h, err := br.ReadString('\n')
			if err != nil {
				return false
			}
			if h == "\r\n" {
				break
			}
		}
		key := line[:strings.LastIndexByte(line, ' ')]
		if _, err := io.WriteString(c, answers[key]); err != nil {
			return false
		}
		return key != "GET /until-close" // that body ends with the connection
	})
	s := parse(t, target, `
version: 1
name: bodies
session:
  cookies: false
  groups:
    - name: g
      requests:
        - { name: fixed, url: "${target}/fixed", assert: [ { body_contains: fixed } ] }
        - { name: head, method: HEAD, url: "${target}/head", assert: [ { status: 200 } ] }
        - { name: empty, url: "${target}/empty", assert: [ { status: 204 } ] }
        - { name: same, url: "${target}/same", assert: [ { status: 304 } ] }
        - { name: chunked, url: "${target}/chunked", assert: [ { body_contains: hello world } ] }
        - { name: continue, url: "${target}/continue", assert: [ { body_contains: continued } ] }
        - { name: until-close, url: "${target}/until-close", assert: [ { body_contains: connection closes } ] }
load:
  vus: 1
  iterations: 3
`)
	res := runScript(t, s, engine.Options{})
	for _, name := range []string{"fixed", "head", "empty", "same", "chunked", "continue", "until-close"} {
		st := stats(t, res, name)
		require.EqualValues(t, 3, st.Requests, name)
		require.Zero(t, st.Failed(), "%s: %+v", name, st.Errors)
	}
}

// The target's certificate is checked against the host's name unless the run says otherwise:
// an unknown authority fails every request as a connection failure.
func TestCertificatesAreVerifiedUnlessInsecure(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "secret")
	}))
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
name: tls
session:
  groups:
    - name: g
      requests:
        - { name: r, url: "${target}/", assert: [ { body_contains: secret } ] }
load:
  vus: 1
  iterations: 2
`)
	checked := stats(t, runScript(t, s, engine.Options{}), "r")
	require.EqualValues(t, 2, checked.Errors[metrics.ErrConnect], "%+v", checked.Errors)
	insecure := stats(t, runScript(t, s, engine.Options{Insecure: true}), "r")
	require.Zero(t, insecure.Failed())
}
