package engine_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/engine"
	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/script"
)

// parse parses a script whose ${target} is replaced by the test server's URL.
func parse(t *testing.T, target, src string) *script.Script {
	t.Helper()
	s, err := script.Parse([]byte(strings.ReplaceAll(src, "${target}", target)), script.ParseOptions{})
	require.NoError(t, err)
	return s
}

// parseB is parse for benchmarks.
func parseB(b *testing.B, src string) *script.Script {
	b.Helper()
	s, err := script.Parse([]byte(src), script.ParseOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func runScript(t *testing.T, s *script.Script, opts engine.Options) *run.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := engine.Run(ctx, s, opts)
	require.NotNil(t, res, "run failed: %v", err)
	return res
}

// stats is the request label's figures.
func stats(t *testing.T, res *run.Result, label string) *metrics.Stats {
	t.Helper()
	return statsOf(t, res, metrics.RequestKey(label))
}

func statsOf(t *testing.T, res *run.Result, k metrics.Key) *metrics.Stats {
	t.Helper()
	st, ok := res.Total.Labels[k]
	require.True(t, ok, "no metrics for %s", k)
	return st
}

func TestClosedModelMeasuresEveryRequest(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "hello")
	}))
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
name: smoke
session:
  groups:
    - name: home
      requests:
        - name: get home
          url: ${target}/
load:
  vus: 4
  duration: 1s
`)
	res := runScript(t, s, engine.Options{})
	st := stats(t, res, "get home")
	require.Equal(t, hits.Load(), st.Requests, "every request the target saw is counted, and only those")
	require.Greater(t, st.Requests, int64(10))
	require.Zero(t, st.Failed())
	require.Equal(t, st.Requests*5, st.BytesIn-headerBytes(t, res))
	require.Equal(t, st.Requests, st.Latency.Count())
	g := statsOf(t, res, metrics.GroupKey("home"))
	require.Equal(t, res.Iterations, g.Requests)
	require.False(t, res.Verdict.GeneratorLimited && len(res.Verdict.Reasons) == 0)
}

// A request named like a group's label is still a request: a group g and a request "group: g"
// are measured apart (they were one label when kinds were name prefixes).
func TestRequestsAndGroupsOfOneNameStayApart(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
name: names
session:
  groups:
    - name: g
      requests:
        - name: "group: g"
          url: ${target}/
    - name: other
      requests:
        - name: g
          url: ${target}/
load:
  vus: 1
  iterations: 3
`)
	res := runScript(t, s, engine.Options{})
	require.EqualValues(t, 3, stats(t, res, "group: g").Requests)
	require.EqualValues(t, 3, stats(t, res, "g").Requests)
	require.EqualValues(t, 3, statsOf(t, res, metrics.GroupKey("g")).Requests)
	require.EqualValues(t, 3, statsOf(t, res, metrics.GroupKey("other")).Requests)
	require.EqualValues(t, 6, res.Total.Requests().Requests, "groups are not requests")
}

// headerBytes is the response header bytes of the run, which BytesIn counts with the bodies.
func headerBytes(t *testing.T, res *run.Result) int64 {
	t.Helper()
	st := stats(t, res, "get home")
	per := (st.BytesIn - 5*st.Requests) / st.Requests
	require.Greater(t, per, int64(40))
	return per * st.Requests
}

func TestExtractionChainsIntoTheNextRequest(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/login":
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: "s-42"})
			w.Header().Set("X-Csrf", "tok-7")
			fmt.Fprint(w, `{"user": {"id": 1234}}`)
		case "/orders/1234":
			c, _ := r.Cookie("sid")
			mu.Lock()
			seen[r.Header.Get("X-Csrf")+"|"+c.Value+"|"+r.URL.Query().Get("sid")]++
			mu.Unlock()
			fmt.Fprint(w, "order 99 ready")
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
name: chain
session:
  groups:
    - name: flow
      requests:
        - name: login
          url: ${target}/login
          extract:
            - { var: uid, json: $.user.id }
            - { var: csrf, header: X-Csrf }
            - { var: sid, cookie: sid }
        - name: order
          url: ${target}/orders/${uid}
          query: { sid: "${sid}" }
          headers: { X-Csrf: "${csrf}" }
          assert:
            - { status: 200 }
            - { body_matches: "order [0-9]+" }
            - { body_contains: "ready" }
load:
  vus: 2
  iterations: 10
`)
	res := runScript(t, s, engine.Options{})
	mu.Lock() // the handlers' writes: the race detector sees no order in raw socket I/O
	defer mu.Unlock()
	require.Zero(t, stats(t, res, "order").Failed())
	require.EqualValues(t, 10, stats(t, res, "order").Requests)
	require.Equal(t, map[string]int{"tok-7|s-42|s-42": 10}, seen)
}

func TestAssertionsAndStatusClasses(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/missing":
			http.NotFound(w, r)
		case "/boom":
			w.WriteHeader(503)
		default:
			fmt.Fprint(w, `{"ok": false}`)
		}
	}))
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
name: classes
session:
  groups:
    - name: g
      requests:
        - { name: missing, url: "${target}/missing" }
        - { name: expected 404, url: "${target}/missing", assert: [ { status: 404 } ] }
        - { name: boom, url: "${target}/boom" }
        - { name: not ok, url: "${target}/json", assert: [ { json: $.ok, equals: true } ] }
        - { name: fine, url: "${target}/json", assert: [ { json: $.ok, equals: false } ] }
load:
  vus: 1
  iterations: 3
`)
	res := runScript(t, s, engine.Options{})
	require.EqualValues(t, 3, stats(t, res, "missing").Errors[metrics.Err4xx])
	require.Zero(t, stats(t, res, "expected 404").Failed())
	require.EqualValues(t, 3, stats(t, res, "boom").Errors[metrics.Err5xx])
	require.EqualValues(t, 3, stats(t, res, "not ok").Errors[metrics.ErrAssertion])
	require.Zero(t, stats(t, res, "fine").Failed())
}

// A large body is read in full (BytesIn counts it) but only BodyCap of it is kept, so memory
// per VU stays bounded; extraction and assertions see the kept part.
func TestLargeBodiesAreCountedButCapped(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 3<<20) + "tail"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "head "+big)
	}))
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
name: big
session:
  groups:
    - name: g
      requests:
        - name: head
          url: ${target}/
          assert: [ { body_contains: "head" } ]
        - name: tail
          url: ${target}/
          assert: [ { body_contains: "tail" } ]
load:
  vus: 1
  iterations: 2
`)
	res := runScript(t, s, engine.Options{BodyCap: 1 << 20})
	head, tail := stats(t, res, "head"), stats(t, res, "tail")
	require.Zero(t, head.Failed())
	require.EqualValues(t, 2, tail.Errors[metrics.ErrAssertion], "the tail lies beyond the cap")
	require.Greater(t, head.BytesIn, int64(2*(3<<20)))
}

// A large body whose length the server states up front is streamed like any other: the VU
// keeps BodyCap of it, not the whole body. Not parallel, so that the process's allocations
// are the run's.
func TestLargeBodiesOfStatedLengthAreNotBuffered(t *testing.T) {
	const size = 64 << 20
	chunk := make([]byte, 64<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		for sent := 0; sent < size; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
name: big
session:
  groups:
    - name: g
      requests:
        - { name: file, url: "${target}/" }
load:
  vus: 1
  iterations: 2
`)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res := runScript(t, s, engine.Options{BodyCap: 1 << 20})
	runtime.ReadMemStats(&after)
	file := stats(t, res, "file")
	require.Zero(t, file.Failed())
	require.Greater(t, file.BytesIn, int64(2*size))
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(size/4), "allocated while reading two bodies of %d bytes", size)
}

// wakeNoise measures how late this process's goroutines wake up, from now until the function it
// returns is called, which says the most a 1 ms timer's goroutine woke up past its time: what a
// loaded machine adds to a latency a test measures is of that order.
func wakeNoise() func() time.Duration {
	stop, worst := make(chan struct{}), make(chan time.Duration)
	go func() {
		var most time.Duration
		t := time.NewTimer(time.Millisecond)
		defer t.Stop()
		for {
			due := time.Now().Add(time.Millisecond)
			t.Reset(time.Millisecond)
			select {
			case <-stop:
				worst <- most
				return
			case <-t.C:
				most = max(most, time.Since(due))
			}
		}
	}()
	return func() time.Duration {
		close(stop)
		return <-worst
	}
}

// hangingServer answers no request until the test ends.
func hangingServer(t *testing.T) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() {
		close(release)
		srv.Close()
	})
	return srv
}

// rawServer is a target on 127.0.0.1 whose bytes the test writes itself: answer is called for
// each request of each connection, with the connection's reader positioned at the request, and
// the connection is closed once answer returns false. It returns the base URL.
func rawServer(tb testing.TB, answer func(c net.Conn, br *bufio.Reader) bool) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for answer(c, br) {
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// A debug shows the headers the target sent: no Content-Type where it sent none (fasthttp
// supplies a default one), and the one it sent otherwise.
func TestDebugShowsTheResponseHeadersAsSent(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/json" {
			w.Header().Set("Content-Type", "application/json")
		} else {
			w.Header()["Content-Type"] = nil // net/http would sniff one
		}
		fmt.Fprint(w, `{"ok":true}`)
	}))
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
session:
  groups:
    - name: g
      requests:
        - { name: bare, url: "${target}/bare" }
        - { name: json, url: "${target}/json" }
load: { vus: 1, iterations: 1 }
`)
	got := map[string]http.Header{}
	err := engine.Debug(context.Background(), s, engine.Options{Trace: func(ev run.TraceEvent) {
		got[ev.Request] = ev.ResponseHeader
	}})
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.NotContains(t, got["bare"], "Content-Type")
	require.Equal(t, "application/json", got["json"].Get("Content-Type"))
}
