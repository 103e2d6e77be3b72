package engine_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
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
	"github.com/barrage-load/barrage/sdk"
	"github.com/barrage-load/barrage/sdk/sdktest"
)

// tickets hands out numbered tickets, each once, up to limit (0: without end).
type tickets struct {
	next  atomic.Int64
	limit int64
	calls atomic.Int64
}

func (tk *tickets) Configure(context.Context, []byte) ([]string, error) { return []string{"id"}, nil }

func (tk *tickets) Next(_ context.Context, n int) ([]sdk.Vars, error) {
	tk.calls.Add(1)
	var out []sdk.Vars
	for range n {
		id := tk.next.Add(1)
		if tk.limit > 0 && id > tk.limit {
			return out, sdk.ErrExhausted
		}
		out = append(out, sdk.Vars{"id": fmt.Sprint(id)})
	}
	return out, nil
}

// signer sets X-Signed on every request, reads X-Served-By into a variable, and fails responses
// with status 409.
type signer struct{}

func (signer) Configure(context.Context, []byte) error { return nil }

func (signer) Before(_ context.Context, call sdk.Call, req *sdk.Request) error {
	req.Header.Set("X-Signed", fmt.Sprintf("vu%d-it%d-%s", call.VU, call.Iteration, req.Method))
	if call.Request == "first" {
		req.URL += "?by=hook" // a hook may change the URL too
	}
	return nil
}

func (signer) After(_ context.Context, _ sdk.Call, _ *sdk.Request, resp *sdk.Response) (sdk.Outcome, error) {
	if resp.Status == http.StatusConflict {
		return sdk.Outcome{Fail: "conflict: " + string(resp.BodyPreview)}, nil
	}
	return sdk.Outcome{Vars: sdk.Vars{"served_by": resp.Header.Get("X-Served-By")}}, nil
}

// seen is a target recording one header and one query parameter per request.
type seen struct {
	mu      sync.Mutex
	headers []string
	params  []string
	paths   []string
}

func (s *seen) serve(header, param string, status int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.headers = append(s.headers, r.Header.Get(header))
		s.params = append(s.params, r.URL.Query().Get(param))
		s.paths = append(s.paths, r.URL.Path)
		s.mu.Unlock()
		w.Header().Set("X-Served-By", "node-7")
		w.WriteHeader(status)
		_, _ = w.Write([]byte("taken"))
	}
}

// runTickets runs a script whose one request carries a ticket of tk in its query, with the
// plugin's scope as the script gives it (scope, load: YAML), and returns the result and the
// tickets the target saw.
func runTickets(t *testing.T, tk *tickets, scriptScope string, engineScope script.Scope, loadYAML string) (*run.Result, []string) {
	t.Helper()
	c := sdktest.Start(t, &sdk.Plugin{Name: "tickets", Version: "1.0.0", Scope: sdk.ScopeIteration, Element: tk})
	target := &seen{}
	srv := httptest.NewServer(target.serve("X-None", "t", 200))
	defer srv.Close()
	s := load(t, t.TempDir(), srv.URL, `
version: 1
plugins: [{use: tickets@1.0.0, kind: session-element`+scriptScope+`}]
session:
  groups:
    - name: g
      requests:
        - { name: r, url: "${target}/?t=${tickets.id}" }
load: `+loadYAML+`
`)
	res, err := engine.Run(context.Background(), s, engine.Options{Plugins: map[string]engine.Plugin{
		"tickets": {Element: c.Element(), Scope: engineScope},
	}})
	require.NoError(t, err)
	target.mu.Lock() // the handlers' writes: the race detector sees no order in raw socket I/O
	defer target.mu.Unlock()
	return res, target.params
}

func TestElementPluginValuesPerIterationAreEachUsedOnce(t *testing.T) {
	t.Parallel()
	tk := &tickets{}
	res, params := runTickets(t, tk, ", scope: iteration", script.ScopeIteration, "{vus: 6, iterations: 120}")
	require.EqualValues(t, 120, res.Iterations)
	require.Len(t, params, 120)
	unique := map[string]bool{}
	for _, p := range params {
		require.NotEmpty(t, p)
		require.False(t, unique[p], "ticket %s used twice", p)
		unique[p] = true
	}
	require.Less(t, tk.calls.Load(), int64(20), "values are fetched in batches, not per iteration")
}

func TestElementPluginScopeVUKeepsOneValuePerVU(t *testing.T) {
	t.Parallel()
	// A duration, not a count of iterations: the first VUs to start could take them all.
	_, params := runTickets(t, &tickets{}, ", scope: vu", script.ScopeVU, "{vus: 4, duration: 1s}")
	distinct := map[string]bool{}
	for _, p := range params {
		distinct[p] = true
	}
	require.Len(t, distinct, 4, "one ticket per VU: %v", distinct)
}

func TestElementPluginRunningOutEndsTheRun(t *testing.T) {
	t.Parallel()
	res, _ := runTickets(t, &tickets{limit: 25}, "", script.ScopeIteration, "{vus: 3, duration: 30s}")
	require.EqualValues(t, 25, res.Iterations)
	require.Contains(t, res.Exhausted, "plugin tickets has no more values")
}

func TestURLPluginChangesRequestsReadsResponsesAndIsTimedApart(t *testing.T) {
	t.Parallel()
	c := sdktest.Start(t, &sdk.Plugin{Name: "signer", Version: "1.0.0", URL: signer{}})
	target := &seen{}
	mux := http.NewServeMux()
	mux.HandleFunc("/signed", target.serve("X-Signed", "by", 200))
	mux.HandleFunc("/conflict", target.serve("X-Signed", "by", 409))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	s := load(t, t.TempDir(), srv.URL, `
version: 1
plugins: [{use: signer@1.0.0, kind: url}]
session:
  groups:
    - name: g
      requests:
        - { name: first, url: "${target}/signed", plugins: [signer] }
        - { name: second, url: "${target}/signed?by=${signer.served_by}" }
        - { name: third, url: "${target}/conflict", plugins: [signer], assert: [{status: 409}] }
load: {vus: 2, iterations: 10}
`)
	res, err := engine.Run(context.Background(), s, engine.Options{Plugins: map[string]engine.Plugin{
		"signer": {URL: []sdk.URLHook{c.URL()}},
	}})
	require.NoError(t, err)
	require.Len(t, target.headers, 30)
	var signed, unsigned int
	for i, h := range target.headers {
		switch {
		case strings.HasPrefix(h, "vu") && strings.HasSuffix(h, "-GET"):
			signed++
			if target.paths[i] == "/signed" {
				require.Equal(t, "hook", target.params[i], "the hook's URL was sent")
			}
		case h == "":
			unsigned++
			require.Equal(t, "node-7", target.params[i], "the variable the hook set reaches the next request")
		default:
			t.Fatalf("unexpected header %q", h)
		}
	}
	require.Equal(t, 20, signed)
	require.Equal(t, 10, unsigned)

	third := res.Total.Labels[metrics.RequestKey("third")]
	require.EqualValues(t, 10, third.Requests)
	require.EqualValues(t, 10, third.Errors[metrics.ErrAssertion], "the hook failed the 409s")
	require.EqualValues(t, 0, res.Total.Labels[metrics.RequestKey("first")].Failed())
	require.Equal(t, []string{"signer"}, res.Hooks)
	hook := res.Total.Labels[metrics.HookKey("signer")]
	require.EqualValues(t, 40, hook.Requests, "before and after of 20 requests")
	require.Positive(t, hook.Latency.Max())
}

// broken fails every call.
type broken struct{}

func (broken) Configure(context.Context, []byte) error { return nil }
func (broken) Before(context.Context, sdk.Call, *sdk.Request) error {
	return errors.New("signing key unavailable")
}
func (broken) After(context.Context, sdk.Call, *sdk.Request, *sdk.Response) (sdk.Outcome, error) {
	return sdk.Outcome{}, nil
}

func TestAFailingURLPluginFailsItsRequestsWithTheReason(t *testing.T) {
	t.Parallel()
	c := sdktest.Start(t, &sdk.Plugin{Name: "broken", Version: "1.0.0", URL: broken{}})
	target := &seen{}
	srv := httptest.NewServer(target.serve("X-Signed", "by", 200))
	defer srv.Close()
	s := load(t, t.TempDir(), srv.URL, `
version: 1
plugins: [{use: broken@1.0.0, kind: url}]
session:
  groups:
    - name: g
      requests:
        - { name: r, url: "${target}/", plugins: [broken] }
load: {vus: 2, iterations: 6}
`)
	res, err := engine.Run(context.Background(), s, engine.Options{Plugins: map[string]engine.Plugin{
		"broken": {URL: []sdk.URLHook{c.URL()}},
	}})
	require.NoError(t, err)
	require.Empty(t, target.headers, "no request was sent")
	require.EqualValues(t, 6, res.Unsent)
	require.Len(t, res.HookErrors, 1)
	for reason, n := range res.HookErrors {
		require.Contains(t, reason, "signing key unavailable")
		require.EqualValues(t, 6, n)
	}
}

func TestAScriptWithAPluginThatWasNotStartedIsRefused(t *testing.T) {
	t.Parallel()
	s := load(t, t.TempDir(), "http://127.0.0.1:1", `
version: 1
plugins: [{use: signer@1.0.0, kind: url}]
session:
  groups:
    - name: g
      requests:
        - { name: r, url: "${target}/", plugins: [signer] }
load: {vus: 1, iterations: 1}
`)
	_, err := engine.Run(context.Background(), s, engine.Options{})
	require.ErrorContains(t, err, "plugin signer (signer@1.0.0) was not started")
}

func TestDebugGivesElementPluginValues(t *testing.T) {
	t.Parallel()
	for _, scope := range []script.Scope{script.ScopeRun, script.ScopeVU, script.ScopeIteration} {
		c := sdktest.Start(t, &sdk.Plugin{Name: "tickets", Version: "1.0.0", Scope: sdk.ScopeIteration, Element: &tickets{}})
		target := &seen{}
		srv := httptest.NewServer(target.serve("X-None", "t", 200))
		s := load(t, t.TempDir(), srv.URL, `
version: 1
plugins: [{use: tickets@1.0.0, kind: session-element}]
session:
  groups:
    - name: g
      requests:
        - { name: r, url: "${target}/?t=${tickets.id}" }
load: {vus: 1, iterations: 1}
`)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := engine.Debug(ctx, s, engine.Options{Trace: func(run.TraceEvent) {}, Plugins: map[string]engine.Plugin{
			"tickets": {Element: c.Element(), Scope: scope},
		}})
		cancel()
		srv.Close()
		require.NoError(t, err, "scope %s", scope)
		require.Equal(t, []string{"1"}, target.params, "scope %s", scope)
	}
}

// slowAfter answers Before at once and After only when its context ends, like a plugin busy
// when the run is cut short.
type slowAfter struct{}

func (slowAfter) Configure(context.Context, []byte) error              { return nil }
func (slowAfter) Before(context.Context, sdk.Call, *sdk.Request) error { return nil }
func (s slowAfter) After(ctx context.Context, _ sdk.Call, _ *sdk.Request, _ *sdk.Response) (sdk.Outcome, error) {
	<-ctx.Done()
	return sdk.Outcome{}, ctx.Err()
}

func TestAHookCutShortByTheEndOfTheRunIsNoFailure(t *testing.T) {
	t.Parallel()
	target := &seen{}
	srv := httptest.NewServer(target.serve("X-None", "t", 200))
	defer srv.Close()
	s := load(t, t.TempDir(), srv.URL, `
version: 1
plugins: [{use: slow@1.0.0, kind: url, as: slow}]
session:
  groups:
    - name: g
      requests:
        - { name: r, url: "${target}/", plugins: [slow] }
load: {vus: 2, duration: 1s, graceful_stop: 0s}
`)
	res, err := engine.Run(context.Background(), s, engine.Options{Plugins: map[string]engine.Plugin{
		"slow": {URL: []sdk.URLHook{slowAfter{}}},
	}})
	require.NoError(t, err)
	st := res.Total.Labels[metrics.RequestKey("r")]
	require.Empty(t, res.HookErrors, "a hook cut short by the end of the run is not a plugin failure")
	require.Zero(t, res.Unsent)
	require.Positive(t, res.Interrupted)
	if st != nil {
		require.Zero(t, st.Failed(), "nor a failed request")
	}
}
