package e2etest

import (
	"bytes"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// Front is a load balancer on 127.0.0.1 in front of serve replicas, as an operator would put
// nginx or a cloud balancer with health checks: it spreads requests over the replicas in turn
// and, when a replica cannot be dialled (killed, or shut down and no longer listening), sends
// the request to the next. Streams (the live stream, an agent's lease long poll) pass through
// unbuffered. A replica that dies in the middle of an answer breaks that answer (502), as it
// would behind any balancer.
type Front struct {
	// Endpoint is the front as a server to point the CLI and agents at: only its URL is set.
	Endpoint *Server
	// URL is where the front listens.
	URL string

	mu       sync.Mutex
	replicas []string // the replicas' URLs; "" where one is out of the pool
	next     atomic.Uint64
	// Failovers counts the requests sent to another replica because one could not be dialled.
	Failovers atomic.Int64
}

// ReplicaHeader names, in the front's answers, the URL of the replica that answered.
const ReplicaHeader = "X-Front-Replica"

// NewFront starts a front for the replicas, closed at the test's end.
func NewFront(t testing.TB, replicas ...*Server) *Front {
	t.Helper()
	f := &Front{}
	for _, r := range replicas {
		f.replicas = append(f.replicas, r.URL)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(*httputil.ProxyRequest) {}, // the transport picks the replica
		Transport:     &frontTransport{f: f, next: http.DefaultTransport},
		FlushInterval: -1,
		ModifyResponse: func(res *http.Response) error {
			res.Header.Set(ReplicaHeader, "http://"+res.Request.URL.Host)
			return nil
		},
		// A replica killed in the middle of an answer is what the tests do on purpose: the
		// client sees its answer cut, and the front has nothing to add.
		ErrorLog: log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, "no replica answered: "+err.Error(), http.StatusBadGateway)
		},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The body is kept so that a request can go to the next replica: requests to serve are
		// small (a report is a few kilobytes a second).
		if r.Body != nil {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	f.Endpoint = &Server{URL: srv.URL}
	return f
}

// Set puts the replica at url in the pool in place i (a replica restarted on another port);
// "" takes place i out.
func (f *Front) Set(i int, url string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.replicas[i] = url
}

func (f *Front) pool() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, r := range f.replicas {
		if r != "" {
			out = append(out, r)
		}
	}
	return out
}

// frontTransport sends a request to the replicas in turn, starting from the next in the
// rotation, until one can be dialled.
type frontTransport struct {
	f    *Front
	next http.RoundTripper
}

func (t *frontTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	pool := t.f.pool()
	if len(pool) == 0 {
		return nil, errors.New("no replica in the pool")
	}
	start := int(t.f.next.Add(1))
	var err error
	for i := range pool {
		base, perr := url.Parse(pool[(start+i)%len(pool)])
		if perr != nil {
			return nil, perr
		}
		out := req.Clone(req.Context())
		out.URL.Scheme, out.URL.Host, out.Host = base.Scheme, base.Host, base.Host
		if req.Body != nil && req.GetBody != nil {
			if out.Body, err = req.GetBody(); err != nil {
				return nil, err
			}
		}
		var res *http.Response
		res, err = t.next.RoundTrip(out)
		if err == nil || !notDialled(err) || req.Context().Err() != nil {
			return res, err
		}
		t.f.Failovers.Add(1)
	}
	return nil, err
}

// notDialled tells an error of a replica that takes no connection: nothing of the request
// reached it, so the next may have it.
func notDialled(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}
