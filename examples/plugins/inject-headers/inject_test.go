package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/sdk"
	"github.com/barrage-load/barrage/sdk/host"
	"github.com/barrage-load/barrage/sdk/sdktest"
)

// script has two groups and three requests; the second request sets x-env itself, in lower
// case. Its body holds a number a float would round, and characters HTML escaping would change.
const script = `{
  "version": 1,
  "name": "shop <smoke>",
  "session": {
    "groups": [
      { "name": "home", "requests": [
        { "name": "get home", "url": "http://127.0.0.1:8081/" }
      ] },
      { "name": "shop", "think": { "fixed": "1s" }, "requests": [
        { "name": "search", "url": "/api/products", "headers": { "x-env": "prod", "Accept": "application/json" } },
        { "name": "order", "method": "POST", "url": "/api/orders", "body": { "json": { "id": 12345678901234567891, "note": "a & b" } } }
      ] }
    ]
  },
  "load": { "vus": 1, "iterations": 1 }
}`

// modify runs the plugin's Modify through sdktest.
func modify(t *testing.T, script, config string) (string, error) {
	t.Helper()
	out, err := sdktest.Start(t, newPlugin()).Modify(context.Background(), []byte(script), []byte(config))
	return string(out), err
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	info, err := sdktest.Start(t, newPlugin()).Describe(context.Background())
	require.NoError(t, err)
	require.Equal(t, "inject-headers", info.Name)
	require.Equal(t, "1.0.0", info.Version)
	require.Equal(t, []sdk.Kind{sdk.KindSourceModifier}, info.Kinds)
}

func TestAddsHeadersKeepingTheScriptsOwn(t *testing.T) {
	t.Parallel()
	out, err := modify(t, script, `{"headers": {"X-Env": "staging", "X-Team": "load"}}`)
	require.NoError(t, err)
	require.JSONEq(t, `{
	  "version": 1,
	  "name": "shop <smoke>",
	  "session": {
	    "groups": [
	      { "name": "home", "requests": [
	        { "name": "get home", "url": "http://127.0.0.1:8081/", "headers": { "X-Env": "staging", "X-Team": "load" } }
	      ] },
	      { "name": "shop", "think": { "fixed": "1s" }, "requests": [
	        { "name": "search", "url": "/api/products", "headers": { "x-env": "prod", "Accept": "application/json", "X-Team": "load" } },
	        { "name": "order", "method": "POST", "url": "/api/orders", "body": { "json": { "id": 12345678901234567891, "note": "a & b" } },
	          "headers": { "X-Env": "staging", "X-Team": "load" } }
	      ] }
	    ]
	  },
	  "load": { "vus": 1, "iterations": 1 }
	}`, out)
	// JSONEq compares numbers as floats: check the digits and the text survived exactly.
	require.Contains(t, out, `"id":12345678901234567891`)
	require.Contains(t, out, `"shop <smoke>"`)
	require.Contains(t, out, `"a & b"`)
}

func TestOverrideReplacesTheScriptsHeader(t *testing.T) {
	t.Parallel()
	out, err := modify(t, script, `{"headers": {"X-Env": "staging"}, "override": true}`)
	require.NoError(t, err)
	require.Contains(t, out, `"headers":{"Accept":"application/json","X-Env":"staging"}`)
	require.NotContains(t, out, `"x-env"`)
	require.Equal(t, 3, strings.Count(out, `"X-Env":"staging"`))
}

func TestGroupAndSessionHeadersCountAsSet(t *testing.T) {
	t.Parallel()
	const s = `{"session": {"headers": {"x-team": "core"}, "groups": [
		{"name": "a", "headers": {"X-ENV": "qa"}, "requests": [{"name": "r1", "url": "/a"}]},
		{"name": "b", "requests": [{"name": "r2", "url": "/b"}]}
	]}}`
	out, err := modify(t, s, `{"headers": {"X-Env": "staging", "X-Team": "load"}}`)
	require.NoError(t, err)
	require.JSONEq(t, `{"session": {"headers": {"x-team": "core"}, "groups": [
		{"name": "a", "headers": {"X-ENV": "qa"}, "requests": [{"name": "r1", "url": "/a"}]},
		{"name": "b", "requests": [{"name": "r2", "url": "/b", "headers": {"X-Env": "staging"}}]}
	]}}`, out)

	out, err = modify(t, s, `{"headers": {"X-Env": "staging", "X-Team": "load"}, "override": true}`)
	require.NoError(t, err)
	require.JSONEq(t, `{"session": {"headers": {"x-team": "core"}, "groups": [
		{"name": "a", "headers": {"X-ENV": "qa"}, "requests": [{"name": "r1", "url": "/a", "headers": {"X-Env": "staging", "X-Team": "load"}}]},
		{"name": "b", "requests": [{"name": "r2", "url": "/b", "headers": {"X-Env": "staging", "X-Team": "load"}}]}
	]}}`, out)
}

func TestBadScriptIsAnError(t *testing.T) {
	t.Parallel()
	for _, bad := range []struct{ script, reason string }{
		{`{"session": {"groups": [`, "unexpected EOF"},
		{`not json`, "invalid character"},
		{`[1, 2]`, "cannot unmarshal array"},
		{`null`, "not an object"},
		{`{"session": {"groups": []}} {}`, "data after"},
		{`{"version": 1}`, "session is missing"},
		{`{"session": {"groups": {"name": "a"}}}`, "session.groups is missing or not a list"},
		{`{"session": {"groups": [{"name": "a", "requests": [{"headers": ["X-Env"]}]}]}}`, "session.groups[0].requests[0].headers is not an object"},
	} {
		_, err := modify(t, bad.script, `{"headers": {"X-Env": "staging"}}`)
		require.ErrorIs(t, err, host.ErrPlugin, bad.script)
		require.ErrorContains(t, err, bad.reason, bad.script)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, config, field, reason string
	}{
		{"no headers", `{}`, "headers", "required"},
		{"empty headers", `{"headers": {}}`, "headers", "required"},
		{"bad name", `{"headers": {"X Env": "a"}}`, "headers.X Env", "not a header name"},
		{"line break", `{"headers": {"X-Env": "a\r\nX-Admin: 1"}}`, "headers.X-Env", "line break"},
		{"twice", `{"headers": {"X-Env": "a", "x-env": "b"}}`, "headers.x-env", "given twice"},
		{"override a string", `{"headers": {"X-Env": "a"}, "override": "yes"}`, "override", "want bool"},
		{"unknown field", `{"headers": {"X-Env": "a"}, "replace": true}`, "", `unknown field "replace"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := modify(t, script, tt.config)
			sdktest.RequireConfigError(t, err, tt.field, tt.reason)
		})
	}
}

func TestConfigSchema(t *testing.T) {
	t.Parallel()
	valid := sdktest.ValidConfig(t, &sdk.Plugin{Name: "inject-headers", ConfigSchema: configSchema})
	require.NoError(t, valid(`{"headers": {"X-Env": "staging", "X-Team": "load"}, "override": false}`))
	for _, bad := range []string{
		`{}`,
		`{"headers": {}}`,
		`{"headers": {"X Env": "a"}}`,
		`{"headers": {"X-Env": "a\nb"}}`,
		`{"headers": {"X-Env": 1}}`,
		`{"headers": {"X-Env": "a"}, "replace": true}`,
	} {
		require.Error(t, valid(bad), bad)
	}
}
