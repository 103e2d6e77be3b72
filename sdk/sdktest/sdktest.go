// Package sdktest runs a plugin in-process for its author's tests. The plugin is served over a
// real gRPC connection through go-plugin's test harness, so a test exercises the same encoding
// and the same batching as a run does, without building a binary.
//
//	func TestSign(t *testing.T) {
//		c := sdktest.Start(t, newPlugin())
//		require.NoError(t, c.URL().Configure(ctx, []byte(`{"key":"k"}`)))
//		req := &sdk.Request{Method: "GET", URL: "http://127.0.0.1/x", Header: http.Header{}}
//		require.NoError(t, c.URL().Before(ctx, sdk.Call{VU: 1, Iteration: 1}, req))
//		...
//	}
package sdktest

import (
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/go-plugin"

	"github.com/barrage-load/barrage/sdk"
	"github.com/barrage-load/barrage/sdk/host"
	"github.com/barrage-load/barrage/sdk/internal/wire"
)

// Start serves p in-process and returns the host's client for it. Both end with the test.
func Start(t testing.TB, p *sdk.Plugin) host.Client {
	t.Helper()
	// Closing the client shuts the server down through go-plugin's controller.
	client, _ := plugin.TestPluginGRPCConn(t, false, wire.ServerSet(p))
	c, err := host.Dispense(client)
	if err != nil {
		t.Fatalf("sdktest: %v", err)
	}
	t.Cleanup(func() {
		_ = c.Close()
		_ = client.Close()
	})
	return c
}

// ValidConfig compiles p's config schema, failing the test when it is not a valid JSON
// Schema, and returns a check of configs against it: nil when a config is valid, else the
// problems, each naming its field.
func ValidConfig(t testing.TB, p *sdk.Plugin) func(config string) error {
	t.Helper()
	s, err := sdk.CompileConfigSchema(p.ConfigSchema)
	if err != nil {
		t.Fatalf("sdktest: %s: %v", p.Name, err)
	}
	return func(config string) error {
		var errs []error
		for _, ce := range s.Validate([]byte(config)) {
			errs = append(errs, ce)
		}
		return errors.Join(errs...)
	}
}

// RequireConfigError fails the test unless err is a *sdk.ConfigError naming field, with a
// reason that contains reason: what a Configure or Modify test checks of a refused config.
func RequireConfigError(t testing.TB, err error, field, reason string) {
	t.Helper()
	var ce *sdk.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("want a config error on %q, got %v", field, err)
	}
	if ce.Field != field || !strings.Contains(ce.Reason, reason) {
		t.Fatalf("want a config error on %q containing %q, got %q: %q", field, reason, ce.Field, ce.Reason)
	}
}
