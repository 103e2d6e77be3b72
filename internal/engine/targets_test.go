package engine_test

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/engine"
	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/netpolicy"
)

// countingListener serves handler on addr and counts the connections it accepts.
func countingListener(t *testing.T, addr string, handler http.Handler) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	var accepted atomic.Int64
	srv := &http.Server{Handler: handler, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			accepted.Add(1)
		}
	}}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String(), &accepted
}

func TestAPolicyKeepsTheLoadOffInternalAddresses(t *testing.T) {
	t.Parallel()
	target, accepted := countingListener(t, "127.0.0.1:0", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	localhost := "http://localhost:" + target[len("http://127.0.0.1:"):]
	for name, url := range map[string]string{"address": target, "name": localhost} {
		t.Run(name, func(t *testing.T) {
			res := runScript(t, oneRequest(t, url, "vus: 1\n  iterations: 3"), engine.Options{Targets: &netpolicy.Policy{}})
			st := stats(t, res, "r")
			require.EqualValues(t, 1, st.Requests, "the refusal ends the run")
			require.EqualValues(t, 1, st.Errors[metrics.ErrConnect], "refused at dial time")
			require.Contains(t, res.Exhausted, "policy refuses")
		})
	}
	require.Zero(t, accepted.Load(), "the target saw no connection")

	allowed := &netpolicy.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	res := runScript(t, oneRequest(t, target, "vus: 1\n  iterations: 3"), engine.Options{Targets: allowed})
	require.Zero(t, stats(t, res, "r").Failed())
	require.Positive(t, accepted.Load())
}

func TestARedirectToARefusedAddressIsNotFollowed(t *testing.T) {
	t.Parallel()
	refusedURL, refusedAccepted := countingListener(t, "127.0.0.2:0", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	target, _ := countingListener(t, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, refusedURL+"/metadata", http.StatusFound)
	}))
	s := parse(t, target, fmt.Sprintf(`
version: 1
name: redirect
session:
  groups:
    - name: g
      requests:
        - { name: r, url: "%s/", redirects: 3 }
load:
  vus: 1
  iterations: 2
`, target))
	only := &netpolicy.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
	res := runScript(t, s, engine.Options{Targets: only})
	require.EqualValues(t, 1, stats(t, res, "r").Errors[metrics.ErrConnect], "the refusal ends the run")
	require.Contains(t, res.Exhausted, "policy refuses")
	require.Zero(t, refusedAccepted.Load(), "the refused host received nothing")
}
