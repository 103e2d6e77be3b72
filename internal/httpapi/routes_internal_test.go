package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"
)

func routerRoutes(t *testing.T) []string {
	t.Helper()
	h, err := NewServer(Deps{Log: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	var routes []string
	err = chi.Walk(h.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		routes = append(routes, routeKey(method, route))
		return nil
	})
	require.NoError(t, err)
	slices.Sort(routes)
	return routes
}

func specRoutes(t *testing.T) []string {
	t.Helper()
	doc, err := loadSpec()
	require.NoError(t, err)
	var routes []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			routes = append(routes, routeKey(method, path))
		}
	}
	slices.Sort(routes)
	return routes
}

// A route without an access policy fails here, before it can ship.
func TestEveryRouteHasAPolicy(t *testing.T) {
	t.Parallel()
	routes := routerRoutes(t)
	require.NotEmpty(t, routes)
	for _, r := range routes {
		_, ok := policies[r]
		require.True(t, ok, "route %s has no entry in the policies table", r)
	}
	for key := range policies {
		require.Contains(t, routes, key, "policy %s names no route", key)
	}
	for key := range heavy {
		require.Contains(t, routes, key, "heavy %s names no route", key)
	}
	for key, rule := range audits {
		require.Contains(t, routes, key, "audited %s names no route", key)
		require.Regexp(t, `^[a-z_]+\.[a-z_]+$`, rule.action, "the audit log's column takes object.verb")
		require.False(t, safeMethod(strings.Fields(key)[0]), "%s reads: the audit log records what changes", key)
	}
}

func TestRouterAndSpecHaveTheSameRoutes(t *testing.T) {
	t.Parallel()
	require.Equal(t, specRoutes(t), routerRoutes(t))
}

// The spec's security must agree with the policy table: public routes declare no security,
// others require the bearer scheme.
func TestSpecSecurityMatchesPolicies(t *testing.T) {
	t.Parallel()
	doc, err := loadSpec()
	require.NoError(t, err)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			key := routeKey(method, path)
			sec := doc.Security
			if op.Security != nil {
				sec = *op.Security
			}
			if policies[key].access == public {
				require.Empty(t, sec, "%s is public in the policy table but the spec asks for credentials", key)
			} else {
				require.NotEmpty(t, sec, "%s needs credentials but the spec declares none", key)
			}
		}
	}
}

// Request bodies must refuse unknown fields, so a typo is an error, not a silently ignored field.
func TestRequestSchemasForbidUnknownFields(t *testing.T) {
	t.Parallel()
	doc, err := loadSpec()
	require.NoError(t, err)
	var check func(name string, s *openapi3.Schema)
	check = func(name string, s *openapi3.Schema) {
		if s == nil || !s.Type.Is("object") {
			return
		}
		if s.AdditionalProperties.Schema != nil { // a map: its values are checked
			check(name+".*", s.AdditionalProperties.Schema.Value)
			return
		}
		require.NotNil(t, s.AdditionalProperties.Has, "%s: set additionalProperties: false", name)
		require.False(t, *s.AdditionalProperties.Has, "%s: set additionalProperties: false", name)
		for prop, ref := range s.Properties {
			check(name+"."+prop, ref.Value)
			for _, sub := range ref.Value.AllOf {
				check(name+"."+prop, sub.Value)
			}
		}
	}
	n := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.RequestBody == nil {
				continue
			}
			for ct, mt := range op.RequestBody.Value.Content {
				switch {
				case ct == "application/json" && mt.Schema.Ref == "#/components/schemas/TestSource":
					// A test's session: the script parser refuses unknown fields itself, with
					// their lines.
				case mt.Schema.Ref == "#/components/schemas/TestDraft":
					// A session to check, JSON or YAML text: whatever it holds, the parser judges
					// it, and the answer says what it found.
				case ct == "application/json" && mt.Schema.Ref == "#/components/schemas/HarDocument":
					// A HAR: browsers add fields of their own (_initiator, _priority), which
					// the format allows; the HAR decoder checks the fields it reads, naming each.
				case ct == "application/json":
					check(method+" "+path, mt.Schema.Value)
					n++
				case ct == "multipart/form-data":
					// A streamed upload: its manifest part is checked against its schema, which
					// forbids unknown fields too.
					check(method+" "+path+" manifest", doc.Components.Schemas["PublishManifest"].Value)
				case ct == "application/yaml" || ct == "application/octet-stream":
					require.True(t, mt.Schema.Value.Type.Is("string"), "%s %s: %s is read whole, as text", method, path, ct)
				default:
					require.Fail(t, "unexpected content type", "%s %s: %s", method, path, ct)
				}
			}
		}
	}
	require.Greater(t, n, 5)
}

func TestSpecIsValid(t *testing.T) {
	t.Parallel()
	doc, err := loadSpec()
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(doc.OpenAPI, "3."))
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			require.NotEmpty(t, op.OperationID, "%s %s", method, path)
			require.NotEmpty(t, op.Summary, "%s %s", method, path)
		}
	}
}

// A request whose client went away failed for that reason, whatever error the handler met: it
// is not logged as the server's error (a client leaving /series mid-read was a logged 500).
func TestAClientThatLeftIsNotAServerError(t *testing.T) {
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w := httptest.NewRecorder()
	writeError(log, w, httptest.NewRequestWithContext(ctx, "GET", "/v1/runs/x/series", nil), fmt.Errorf("reading seconds: %w", context.Canceled))
	require.Equal(t, statusClientClosed, w.Code)
	require.Empty(t, logs.String())

	// With the client still there, the same error is the server's.
	w = httptest.NewRecorder()
	writeError(log, w, httptest.NewRequest("GET", "/v1/runs/x/series", nil), fmt.Errorf("reading seconds: %w", context.Canceled))
	require.Equal(t, http.StatusInternalServerError, w.Code)
	require.Contains(t, logs.String(), "request failed")
}
