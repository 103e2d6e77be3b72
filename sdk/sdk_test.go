package sdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/sdk"
	"github.com/barrage-load/barrage/sdk/host"
	"github.com/barrage-load/barrage/sdk/sdktest"
)

// counter hands out n numbered values, then is exhausted.
type counter struct {
	mu   sync.Mutex
	next int
	last int
}

func (c *counter) Configure(_ context.Context, config []byte) ([]string, error) {
	var cfg struct{ Count int }
	if err := json.Unmarshal(config, &cfg); err != nil {
		return nil, &sdk.ConfigError{Reason: err.Error()}
	}
	if cfg.Count <= 0 {
		return nil, &sdk.ConfigError{Field: "count", Reason: "must be positive"}
	}
	c.last = cfg.Count
	return []string{"n"}, nil
}

func (c *counter) Next(_ context.Context, n int) ([]sdk.Vars, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []sdk.Vars
	for len(out) < n && c.next < c.last {
		c.next++
		out = append(out, sdk.Vars{"n": fmt.Sprint(c.next)})
	}
	if c.next == c.last {
		return out, sdk.ErrExhausted
	}
	return out, nil
}

// tagger adds a header naming the VU before, and fails responses whose status is 500 after.
type tagger struct{}

func (tagger) Configure(context.Context, []byte) error { return nil }

func (tagger) Before(_ context.Context, call sdk.Call, req *sdk.Request) error {
	if call.Request == "panic" {
		panic("boom")
	}
	if call.Request == "refuse" {
		return errors.New("refused")
	}
	req.Header.Set("X-VU", fmt.Sprint(call.VU))
	req.URL += "?signed=1"
	return nil
}

func (tagger) After(_ context.Context, _ sdk.Call, _ *sdk.Request, resp *sdk.Response) (sdk.Outcome, error) {
	if resp.Status == 500 {
		return sdk.Outcome{Fail: "server error: " + string(resp.BodyPreview)}, nil
	}
	return sdk.Outcome{Vars: sdk.Vars{"status": fmt.Sprint(resp.Status)}}, nil
}

type upper struct{}

func (upper) Modify(_ context.Context, script, _ []byte) ([]byte, error) {
	return []byte(strings.ToUpper(string(script))), nil
}

func testPlugin() *sdk.Plugin {
	return &sdk.Plugin{
		Name: "all", Version: "1.0.0", Scope: sdk.ScopeIteration,
		ConfigSchema: `{"type":"object"}`, Network: []string{"db.example:5432", "*.example.com:443"},
		Element: &counter{}, URL: tagger{}, Source: upper{},
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	c := sdktest.Start(t, testPlugin())
	info, err := c.Describe(context.Background())
	require.NoError(t, err)
	require.Equal(t, sdk.Info{
		Name: "all", Version: "1.0.0", Scope: sdk.ScopeIteration, ConfigSchema: `{"type":"object"}`,
		Kinds:           []sdk.Kind{sdk.KindSessionElement, sdk.KindURL, sdk.KindSourceModifier},
		ProtocolVersion: sdk.ProtocolVersion, Network: []string{"db.example:5432", "*.example.com:443"},
	}, info)
}

func TestElementHandsOutEveryValueOnceThenIsExhausted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := sdktest.Start(t, testPlugin())
	vars, err := c.Element().Configure(ctx, []byte(`{"count":5}`))
	require.NoError(t, err)
	require.Equal(t, []string{"n"}, vars)

	got, err := c.Element().Next(ctx, 3)
	require.NoError(t, err)
	require.Equal(t, []sdk.Vars{{"n": "1"}, {"n": "2"}, {"n": "3"}}, got)
	got, err = c.Element().Next(ctx, 3)
	require.ErrorIs(t, err, sdk.ErrExhausted)
	require.Equal(t, []sdk.Vars{{"n": "4"}, {"n": "5"}}, got)
}

func TestConfigErrorNamesTheField(t *testing.T) {
	t.Parallel()
	c := sdktest.Start(t, testPlugin())
	_, err := c.Element().Configure(context.Background(), []byte(`{"count":0}`))
	var ce *sdk.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "config.count: must be positive", ce.Error())
}

func TestURLHookConcurrentCallsEachGetTheirOwnAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := sdktest.Start(t, testPlugin())
	require.NoError(t, c.URL().Configure(ctx, []byte(`{}`)))

	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for vu := 1; vu <= 200; vu++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := &sdk.Request{Method: "GET", URL: "http://127.0.0.1/x", Header: http.Header{}}
			if err := c.URL().Before(ctx, sdk.Call{VU: vu, Iteration: 1, Request: "r"}, req); err != nil {
				errs <- err
				return
			}
			if req.Header.Get("X-VU") != fmt.Sprint(vu) || req.URL != "http://127.0.0.1/x?signed=1" {
				errs <- fmt.Errorf("vu %d got header %q url %q", vu, req.Header.Get("X-VU"), req.URL)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	out, err := c.URL().After(ctx, sdk.Call{VU: 1, Iteration: 1}, &sdk.Request{Method: "GET"}, &sdk.Response{Status: 500, BodyPreview: []byte("db down")})
	require.NoError(t, err)
	require.Equal(t, "server error: db down", out.Fail)
	out, err = c.URL().After(ctx, sdk.Call{VU: 1, Iteration: 1}, &sdk.Request{Method: "GET"}, &sdk.Response{Status: 201})
	require.NoError(t, err)
	require.Equal(t, sdk.Outcome{Vars: sdk.Vars{"status": "201"}}, out)
}

func TestURLHookErrorsAndPanicsFailOnlyTheirCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := sdktest.Start(t, testPlugin())
	err := c.URL().Before(ctx, sdk.Call{VU: 1, Request: "panic"}, &sdk.Request{Header: http.Header{}})
	require.ErrorIs(t, err, host.ErrPlugin)
	require.ErrorContains(t, err, "plugin panicked: boom")
	err = c.URL().Before(ctx, sdk.Call{VU: 1, Request: "refuse"}, &sdk.Request{Header: http.Header{}})
	require.ErrorIs(t, err, host.ErrPlugin)
	require.ErrorContains(t, err, "refused")
	require.NoError(t, c.URL().Before(ctx, sdk.Call{VU: 1, Request: "ok"}, &sdk.Request{Header: http.Header{}}))
}

func TestSourceModifier(t *testing.T) {
	t.Parallel()
	c := sdktest.Start(t, testPlugin())
	out, err := c.Modify(context.Background(), []byte(`{"name":"x"}`), nil)
	require.NoError(t, err)
	require.JSONEq(t, `{"NAME":"X"}`, string(out))
}

func TestUnimplementedHook(t *testing.T) {
	t.Parallel()
	c := sdktest.Start(t, &sdk.Plugin{Name: "src", Version: "1.0.0", Source: upper{}})
	_, err := c.Element().Next(context.Background(), 1)
	require.ErrorIs(t, err, host.ErrUnimplemented)
	err = c.URL().Before(context.Background(), sdk.Call{}, &sdk.Request{Header: http.Header{}})
	require.ErrorIs(t, err, host.ErrUnimplemented)
}

// beforeOnly has nothing to do after responses and says so.
type beforeOnly struct{ tagger }

func (beforeOnly) SkipAfter() bool { return true }

func (beforeOnly) After(context.Context, sdk.Call, *sdk.Request, *sdk.Response) (sdk.Outcome, error) {
	return sdk.Outcome{Fail: "After ran although the plugin skips it"}, nil
}

func TestAHookThatSkipsAfterIsNotCalledAfterResponses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := sdktest.Start(t, &sdk.Plugin{Name: "b", Version: "1.0.0", URL: beforeOnly{}})
	skipper, ok := c.URL().(sdk.AfterSkipper)
	require.True(t, ok)
	require.False(t, skipper.SkipAfter(), "unknown before Configure")
	require.NoError(t, c.URL().Configure(ctx, []byte(`{}`)))
	require.True(t, skipper.SkipAfter())
	out, err := c.URL().After(ctx, sdk.Call{VU: 1}, &sdk.Request{}, &sdk.Response{Status: 500})
	require.NoError(t, err)
	require.Equal(t, sdk.Outcome{}, out)

	c2 := sdktest.Start(t, testPlugin())
	require.NoError(t, c2.URL().Configure(ctx, []byte(`{}`)))
	require.False(t, c2.URL().(sdk.AfterSkipper).SkipAfter(), "a hook without SkipAfter gets every After")
}

// headerHook only changes headers: the plugin answers with a patch, not the whole request.
type headerHook struct{ tagger }

func (headerHook) Before(_ context.Context, _ sdk.Call, req *sdk.Request) error {
	req.Header.Set("X-Sig", "abc")
	req.Header.Del("X-Remove")
	req.Header["X-Multi"] = []string{"1", "2"}
	req.Header.Set("Accept", "application/json")
	return nil
}

func TestAHookThatOnlyChangesHeadersSendsAPatchTheClientApplies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := sdktest.Start(t, &sdk.Plugin{Name: "h", Version: "1.0.0", URL: headerHook{}})
	req := &sdk.Request{Method: "POST", URL: "http://127.0.0.1/x", Body: []byte("body"), Header: http.Header{
		"Accept": {"*/*"}, "X-Remove": {"gone"}, "X-Keep": {"kept"}, "X-Multi": {"0"},
	}}
	require.NoError(t, c.URL().Before(ctx, sdk.Call{VU: 1, Iteration: 1}, req))
	require.Equal(t, http.Header{
		"Accept": {"application/json"}, "X-Keep": {"kept"}, "X-Multi": {"1", "2"}, "X-Sig": {"abc"},
	}, req.Header)
	require.Equal(t, "POST", req.Method)
	require.Equal(t, "http://127.0.0.1/x", req.URL)
	require.Equal(t, "body", string(req.Body))
}

// stuck never answers Before until its stream ends.
type stuck struct{ tagger }

func (stuck) Before(ctx context.Context, _ sdk.Call, _ *sdk.Request) error {
	<-ctx.Done()
	return ctx.Err()
}

func TestACallWithoutAnswerFailsAtTheCallTimeout(t *testing.T) {
	t.Parallel()
	c := sdktest.Start(t, &sdk.Plugin{Name: "s", Version: "1.0.0", URL: stuck{}})
	c.SetCallTimeout(200 * time.Millisecond)
	err := c.URL().Before(context.Background(), sdk.Call{VU: 1}, &sdk.Request{Header: http.Header{}})
	require.ErrorIs(t, err, host.ErrNoAnswer)
	require.ErrorContains(t, err, "no answer within 200ms")
}

// pureHook signs a request by what it holds, counting its Before calls; it says it is pure
// when configured with {"pure": true}, and rewrites the URL of requests to /rewrite.
type pureHook struct {
	tagger
	pure  atomic.Bool
	calls atomic.Int64
}

func (h *pureHook) Configure(_ context.Context, config []byte) error {
	var cfg struct{ Pure bool }
	if err := json.Unmarshal(config, &cfg); err != nil {
		return &sdk.ConfigError{Reason: err.Error()}
	}
	h.pure.Store(cfg.Pure)
	return nil
}

func (h *pureHook) PureBefore() bool { return h.pure.Load() }

func (h *pureHook) Before(_ context.Context, _ sdk.Call, req *sdk.Request) error {
	h.calls.Add(1)
	switch {
	case strings.HasSuffix(req.URL, "/rewrite"):
		req.URL += "d"
		req.Body = append(req.Body, "!"...)
	case strings.HasSuffix(req.URL, "/grow"):
		req.Body = bytes.Repeat([]byte("x"), 100<<10)
	}
	req.Header.Set("X-Sig", fmt.Sprintf("%s %s %s %v", req.Method, req.URL, req.Body, req.Header))
	return nil
}

func TestAPureHookIsCalledOncePerDistinctRequest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := &pureHook{}
	c := sdktest.Start(t, &sdk.Plugin{Name: "p", Version: "1.0.0", URL: h}).URL()
	require.NoError(t, c.Configure(ctx, []byte(`{"pure": true}`)))
	require.True(t, c.(sdk.PureBefore).PureBefore())

	sign := func(method, url, body string, header http.Header) *sdk.Request {
		t.Helper()
		req := &sdk.Request{Method: method, URL: url, Body: []byte(body), Header: header}
		require.NoError(t, c.Before(ctx, sdk.Call{VU: 1, Iteration: 1}, req))
		return req
	}
	first := sign("GET", "http://127.0.0.1/a", "", http.Header{"Accept": {"*/*"}, "X-B": {"1", "2"}})
	require.Equal(t, int64(1), h.calls.Load())
	for vu := range 5 {
		// The same request from another VU and iteration, its headers made in another order.
		req := &sdk.Request{Method: "GET", URL: "http://127.0.0.1/a", Body: []byte{}, Header: http.Header{"X-B": {"1", "2"}, "Accept": {"*/*"}}}
		require.NoError(t, c.Before(ctx, sdk.Call{VU: vu + 2, Iteration: 7}, req))
		require.Equal(t, first, req)
	}
	require.Equal(t, int64(1), h.calls.Load(), "an identical request is answered from what the host kept")

	// Anything that differs is a request of its own.
	sign("POST", "http://127.0.0.1/a", "", http.Header{"Accept": {"*/*"}, "X-B": {"1", "2"}})
	sign("GET", "http://127.0.0.1/b", "", http.Header{"Accept": {"*/*"}, "X-B": {"1", "2"}})
	sign("GET", "http://127.0.0.1/a", "x", http.Header{"Accept": {"*/*"}, "X-B": {"1", "2"}})
	sign("GET", "http://127.0.0.1/a", "", http.Header{"Accept": {"*/*"}, "X-B": {"2", "1"}})
	sign("GET", "http://127.0.0.1/a", "", http.Header{"Accept": {"*/*"}, "X-B": {"1"}, "X-C": {"2"}})
	sign("GET", "http://127.0.0.1/a", "", http.Header{"Accept": {"*/*", "X-B"}})
	require.Equal(t, int64(7), h.calls.Load())

	// A request the hook replaced whole: each caller gets a body of its own.
	r1 := sign("PUT", "http://127.0.0.1/rewrite", "b", http.Header{})
	r2 := sign("PUT", "http://127.0.0.1/rewrite", "b", http.Header{})
	require.Equal(t, int64(8), h.calls.Load())
	require.Equal(t, r1, r2)
	require.Equal(t, "http://127.0.0.1/rewrited", r2.URL)
	require.Equal(t, "b!", string(r2.Body))
	r2.Body[0] = 'X'
	require.Equal(t, "b!", string(sign("PUT", "http://127.0.0.1/rewrite", "b", http.Header{}).Body))

	// A request too big to keep goes to the plugin every time.
	big := strings.Repeat("x", 8<<10)
	sign("POST", "http://127.0.0.1/a", big, http.Header{})
	sign("POST", "http://127.0.0.1/a", big, http.Header{})
	require.Equal(t, int64(10), h.calls.Load())
	// So does one whose answer is too big to keep.
	require.Len(t, sign("POST", "http://127.0.0.1/grow", "", http.Header{}).Body, 100<<10)
	sign("POST", "http://127.0.0.1/grow", "", http.Header{})
	require.Equal(t, int64(12), h.calls.Load())

	// Configured again, the hook's answers are forgotten; not pure, it is called every time.
	require.NoError(t, c.Configure(ctx, []byte(`{"pure": false}`)))
	require.False(t, c.(sdk.PureBefore).PureBefore())
	sign("GET", "http://127.0.0.1/a", "", http.Header{"Accept": {"*/*"}, "X-B": {"1", "2"}})
	sign("GET", "http://127.0.0.1/a", "", http.Header{"Accept": {"*/*"}, "X-B": {"1", "2"}})
	require.Equal(t, int64(14), h.calls.Load())
}

func TestAHookThatSaysNothingOfPurityIsCalledEveryTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := sdktest.Start(t, &sdk.Plugin{Name: "h", Version: "1.0.0", URL: headerHook{}}).URL()
	require.NoError(t, c.Configure(ctx, []byte(`{}`)))
	require.False(t, c.(sdk.PureBefore).PureBefore())
}
