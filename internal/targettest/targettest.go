// Package targettest gives tests targets on 127.0.0.1 that take time on purpose: a latency to
// measure, or one that dominates what a loaded machine adds to a request. It is the one place a
// test's target waits on the clock.
package targettest

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// Work stands for a target's work on a request, which takes d. It ends early when the client
// gives up on the request.
func Work(r *http.Request, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
}

// Slow starts a target that answers each request after d, closed at the test's end, and returns
// its URL.
func Slow(t testing.TB, d time.Duration) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { Work(r, d) }))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Limited is a target that serves a number of requests at a time, each in a given time. It
// keeps how long its workers held the requests they served, to tell what it can serve on this
// machine, whose timers wake up late when it is loaded.
type Limited struct {
	URL     string
	workers int
	served  atomic.Int64
	held    atomic.Int64 // nanoseconds
}

// NewLimited starts a Limited target of workers that take d each, closed at the test's end.
func NewLimited(t testing.TB, workers int, d time.Duration) *Limited {
	t.Helper()
	l := &Limited{workers: workers}
	pool := make(chan struct{}, workers)
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		pool <- struct{}{}
		from := time.Now()
		Work(r, d)
		l.held.Add(int64(time.Since(from)))
		l.served.Add(1)
		<-pool
	}))
	t.Cleanup(srv.Close)
	l.URL = srv.URL
	return l
}

// Capacity is the most requests a second the target served: its workers, each taking the time
// a request took them on average. It is 0 before the first request is served.
func (l *Limited) Capacity() float64 {
	n := l.served.Load()
	if n == 0 {
		return 0
	}
	return float64(l.workers) / (time.Duration(l.held.Load() / n)).Seconds()
}
