package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"hash"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/sdk"
	"github.com/barrage-load/barrage/sdk/host"
	"github.com/barrage-load/barrage/sdk/sdktest"
)

// verify says whether sig is the signature of a request, as a server would check it: from the
// method, the path and query of the request line, and the body.
func verify(newHash func() hash.Hash, key, method, pathAndQuery string, body []byte, sig string) bool {
	mac := hmac.New(newHash, []byte(key))
	mac.Write([]byte(method + "\n" + pathAndQuery + "\n"))
	mac.Write(body)
	got, err := hex.DecodeString(sig)
	return err == nil && hmac.Equal(got, mac.Sum(nil))
}

// start starts the plugin in-process, with env as its process's environment, and configures
// it.
func start(t *testing.T, env map[string]string, config string) sdk.URLHook {
	t.Helper()
	h := sdktest.Start(t, newPlugin(func(name string) string { return env[name] })).URL()
	require.NoError(t, h.Configure(context.Background(), []byte(config)))
	return h
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	info, err := sdktest.Start(t, newPlugin(nil)).Describe(context.Background())
	require.NoError(t, err)
	require.Equal(t, "hmac-sign", info.Name)
	require.Equal(t, "1.0.0", info.Version)
	require.Equal(t, []sdk.Kind{sdk.KindURL}, info.Kinds)
}

func TestBeforeIsPure(t *testing.T) {
	t.Parallel()
	// The signature depends on the request alone, so the host may keep it for an identical one.
	require.True(t, start(t, nil, `{"key": "k"}`).(sdk.PureBefore).PureBefore())
	require.False(t, (&hook{}).PureBefore(), "not before Configure")
}

func TestBeforeSetsOnlyTheSignatureHeader(t *testing.T) {
	t.Parallel()
	h := start(t, nil, `{"key": "s3cret"}`)
	ctx := context.Background()
	tests := []struct {
		method, url, pathAndQuery string
		body                      []byte
	}{
		{"POST", "http://127.0.0.1:8081/orders?expand=items&x=%2F", "/orders?expand=items&x=%2F", []byte(`{"sku":"A-1"}`)},
		{"GET", "http://127.0.0.1:8081", "/", nil},
		{"GET", "http://127.0.0.1:8081?q=1", "/?q=1", nil},
		{"PUT", "http://[::1]:8081/a%20b/c", "/a%20b/c", []byte("line 1\nline 2")},
	}
	for _, tt := range tests {
		req := &sdk.Request{Method: tt.method, URL: tt.url, Header: http.Header{"Accept": {"application/json"}}, Body: tt.body}
		require.NoError(t, h.Before(ctx, sdk.Call{VU: 1, Iteration: 1, Request: "r"}, req))
		sig := req.Header.Get("X-Signature")
		require.True(t, verify(sha256.New, "s3cret", tt.method, tt.pathAndQuery, tt.body, sig), "%s %s: bad signature %q", tt.method, tt.url, sig)
		require.Len(t, sig, 64)
		// Nothing else changed.
		require.Equal(t, http.Header{"Accept": {"application/json"}, "X-Signature": {sig}}, req.Header)
		require.Equal(t, tt.url, req.URL)
		require.Equal(t, tt.body, req.Body)

		// The same request signs the same.
		again := &sdk.Request{Method: tt.method, URL: tt.url, Header: http.Header{}, Body: tt.body}
		require.NoError(t, h.Before(ctx, sdk.Call{VU: 2, Iteration: 5, Request: "r"}, again))
		require.Equal(t, sig, again.Header.Get("X-Signature"))
	}

	// Anything signed differently does not verify.
	req := &sdk.Request{Method: "POST", URL: "http://127.0.0.1/pay", Header: http.Header{}, Body: []byte("10")}
	require.NoError(t, h.Before(ctx, sdk.Call{VU: 1, Iteration: 1}, req))
	sig := req.Header.Get("X-Signature")
	require.False(t, verify(sha256.New, "s3cret", "POST", "/pay", []byte("11"), sig))
	require.False(t, verify(sha256.New, "s3cret", "PUT", "/pay", []byte("10"), sig))
	require.False(t, verify(sha256.New, "other", "POST", "/pay", []byte("10"), sig))
}

func TestKeyFromEnvSHA512AndOwnHeader(t *testing.T) {
	t.Parallel()
	h := start(t, map[string]string{"SIGN_KEY": "from-env"}, `{"key_env": "SIGN_KEY", "algorithm": "sha512", "header": "X-Sig"}`)
	req := &sdk.Request{Method: "DELETE", URL: "http://127.0.0.1/items/9", Header: http.Header{}}
	require.NoError(t, h.Before(context.Background(), sdk.Call{VU: 1, Iteration: 1}, req))
	require.Len(t, req.Header, 1)
	sig := req.Header.Get("X-Sig")
	require.Len(t, sig, 128)
	require.True(t, verify(sha512.New, "from-env", "DELETE", "/items/9", nil, sig))
}

func TestConcurrentCallsEachGetTheirOwnSignature(t *testing.T) {
	t.Parallel()
	h := start(t, nil, `{"key": "k"}`)
	var wg sync.WaitGroup
	errs := make(chan error, 300)
	for vu := 1; vu <= 300; vu++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := fmt.Sprintf("/users/%d?page=%d", vu, vu%7)
			body := fmt.Appendf(nil, `{"vu":%d}`, vu)
			req := &sdk.Request{Method: "POST", URL: "http://127.0.0.1:8081" + path, Header: http.Header{}, Body: body}
			if err := h.Before(context.Background(), sdk.Call{VU: vu, Iteration: 1, Request: "r"}, req); err != nil {
				errs <- err
				return
			}
			if sig := req.Header.Get("X-Signature"); !verify(sha256.New, "k", "POST", path, body, sig) {
				errs <- fmt.Errorf("vu %d: signature %q does not verify", vu, sig)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func TestBeforeRefusesABadURL(t *testing.T) {
	t.Parallel()
	h := start(t, nil, `{"key": "k"}`)
	err := h.Before(context.Background(), sdk.Call{VU: 1}, &sdk.Request{Method: "GET", URL: "http://[::1", Header: http.Header{}})
	require.ErrorIs(t, err, host.ErrPlugin)
}

func TestAfter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	call := sdk.Call{VU: 1, Iteration: 1, Request: "r"}
	req := &sdk.Request{Method: "GET", URL: "http://127.0.0.1/", Header: http.Header{}}
	withID := http.Header{"X-Request-Id": {"req-42"}}

	// Without read_header there is nothing to do after a response: the host skips After (a
	// 401 fails the request as any 4xx does).
	plain := start(t, nil, `{"key": "k"}`)
	require.True(t, plain.(sdk.AfterSkipper).SkipAfter())
	out, err := plain.After(ctx, call, req, &sdk.Response{Status: 401, Header: http.Header{}})
	require.NoError(t, err)
	require.Equal(t, sdk.Outcome{}, out)

	reading := start(t, nil, `{"key": "k", "read_header": "X-Request-Id"}`)
	require.False(t, reading.(sdk.AfterSkipper).SkipAfter())
	out, err = reading.After(ctx, call, req, &sdk.Response{Status: 200, Header: withID})
	require.NoError(t, err)
	require.Equal(t, sdk.Outcome{Vars: sdk.Vars{"x_request_id": "req-42"}}, out)
	out, err = reading.After(ctx, call, req, &sdk.Response{Status: 401, Header: withID})
	require.NoError(t, err)
	require.Equal(t, sdk.Outcome{Vars: sdk.Vars{"x_request_id": "req-42"}, Fail: "signature rejected (401)"}, out)
	out, err = reading.After(ctx, call, req, &sdk.Response{Status: 403, Header: http.Header{}})
	require.NoError(t, err)
	require.Equal(t, sdk.Outcome{}, out, "no header, no variable; only 401 fails")
}

func TestConfigErrorsNameTheField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, config, field, reason string
	}{
		{"no key", `{}`, "key", "required"},
		{"both keys", `{"key": "k", "key_env": "K"}`, "key", "not both"},
		{"unset env", `{"key_env": "UNSET"}`, "key_env", "allow-list"},
		{"md5", `{"key": "k", "algorithm": "md5"}`, "algorithm", `unknown algorithm "md5"`},
		{"bad header", `{"key": "k", "header": "X Sig"}`, "header", "not a header name"},
		{"bad read_header", `{"key": "k", "read_header": "X.Id"}`, "read_header", "not a header name"},
		{"key a number", `{"key": 42}`, "key", "want string"},
		{"unknown field", `{"key": "k", "headers": "X"}`, "", `unknown field "headers"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := sdktest.Start(t, newPlugin(func(string) string { return "" })).URL().Configure(context.Background(), []byte(tt.config))
			sdktest.RequireConfigError(t, err, tt.field, tt.reason)
		})
	}
}

func TestConfigSchema(t *testing.T) {
	t.Parallel()
	valid := sdktest.ValidConfig(t, &sdk.Plugin{Name: "hmac-sign", ConfigSchema: configSchema})
	require.NoError(t, valid(`{"key_env": "HMAC_KEY", "header": "X-Signature", "algorithm": "sha512", "read_header": "X-Request-Id"}`))
	require.NoError(t, valid(`{"key": "k"}`))
	for _, bad := range []string{
		`{}`,
		`{"key": "k", "key_env": "K"}`,
		`{"key": "k", "algorithm": "md5"}`,
		`{"key": "k", "header": "X Sig"}`,
		`{"key": "k", "extra": true}`,
	} {
		require.Error(t, valid(bad), bad)
	}
}
