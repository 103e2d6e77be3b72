package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func TestBadInputAnswersProblemsNever500(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{maxBody: 4096})
	admin := b.firstAdmin()

	t.Run("malformed JSON is 400", func(t *testing.T) {
		p := requireProblem(t, b.do("POST", "/v1/auth/login", "", `{"email": "a@b.c", "password":`), http.StatusBadRequest)
		require.Equal(t, "urn:barrage:problem:malformed-request", p["type"])
	})
	t.Run("a second document after the body is 400", func(t *testing.T) {
		for _, body := range []string{`{"email": "a@b.c", "password": "x"} garbage`, `{"email": "a@b.c", "password": "x"}{"email": "b@b.c"}`} {
			p := requireProblem(t, b.do("POST", "/v1/auth/login", "", body), http.StatusBadRequest)
			require.Equal(t, "urn:barrage:problem:malformed-request", p["type"])
		}
		p := requireProblem(t, b.do("POST", "/v1/admin/invitations", admin.access, `{"uses": 1}{"uses": 1000}`), http.StatusBadRequest)
		require.Contains(t, p["detail"], "more than one JSON document")
	})
	t.Run("missing body is 400", func(t *testing.T) {
		requireProblem(t, b.do("POST", "/v1/auth/login", "", nil), http.StatusBadRequest)
	})
	t.Run("wrong content type is 415", func(t *testing.T) {
		requireProblem(t, b.do("POST", "/v1/auth/login", "", `email=a`, "Content-Type", "application/x-www-form-urlencoded"), http.StatusUnsupportedMediaType)
	})
	t.Run("unknown field is 422 naming it", func(t *testing.T) {
		p := requireProblem(t, b.do("POST", "/v1/auth/login", "", map[string]any{"email": "a@b.c", "password": "x", "remember": true}), http.StatusUnprocessableEntity)
		require.Equal(t, "unknown field", requireField(t, p, "remember"))
	})
	t.Run("unknown nested field is 422 naming its path", func(t *testing.T) {
		p := requireProblem(t, b.do("POST", "/v1/admin/invitations", admin.access, map[string]any{"license": map[string]any{"template": "demo", "vus": 5}}), http.StatusUnprocessableEntity)
		requireField(t, p, "license.vus")
	})
	t.Run("wrong type is 422 naming the field", func(t *testing.T) {
		p := requireProblem(t, b.do("POST", "/v1/admin/invitations", admin.access, map[string]any{"uses": "three"}), http.StatusUnprocessableEntity)
		requireField(t, p, "uses")
	})
	t.Run("valid JSON that does not decode into the type is 422", func(t *testing.T) {
		p := requireProblem(t, b.do("POST", "/v1/admin/invitations", admin.access, `{"uses": 1e2}`), http.StatusUnprocessableEntity)
		requireField(t, p, "uses")
	})
	t.Run("login email with a NUL answers like an unknown one", func(t *testing.T) {
		requireProblem(t, b.do("POST", "/v1/auth/login", "", `{"email": "a\u0000@b.c", "password": "whatever it is"}`), http.StatusUnauthorized)
	})
	t.Run("every problem is reported at once", func(t *testing.T) {
		p := requireProblem(t, b.do("POST", "/v1/admin/invitations", admin.access, map[string]any{"uses": 0, "role": "root", "note": 3}), http.StatusUnprocessableEntity)
		requireField(t, p, "uses")
		requireField(t, p, "role")
		requireField(t, p, "note")
	})
	t.Run("missing required field is 422", func(t *testing.T) {
		p := requireProblem(t, b.do("POST", "/v1/auth/signup", "", map[string]any{"email": "a@b.c", "password": "long enough password", "name": "A"}), http.StatusUnprocessableEntity)
		requireField(t, p, "invitation_code")
	})
	t.Run("bad email is 422", func(t *testing.T) {
		p := requireProblem(t, b.do("POST", "/v1/auth/signup", "", map[string]any{"invitation_code": "brg_inv_x", "email": "not an email", "password": "long enough password", "name": "A"}), http.StatusUnprocessableEntity)
		requireField(t, p, "email")
	})
	t.Run("short password is 422", func(t *testing.T) {
		p := requireProblem(t, b.do("POST", "/v1/auth/signup", "", map[string]any{"invitation_code": "brg_inv_x", "email": "a@b.c", "password": "short", "name": "A"}), http.StatusUnprocessableEntity)
		requireField(t, p, "password")
	})
	t.Run("unknown invitation code is 422", func(t *testing.T) {
		p := requireProblem(t, b.do("POST", "/v1/auth/signup", "", map[string]any{"invitation_code": "brg_inv_nope", "email": "a@b.c", "password": "long enough password", "name": "A"}), http.StatusUnprocessableEntity)
		requireField(t, p, "invitation_code")
	})
	t.Run("body over the limit is 413", func(t *testing.T) {
		big := `{"email": "a@b.c", "password": "` + strings.Repeat("x", 5000) + `"}`
		requireProblem(t, b.do("POST", "/v1/auth/login", "", big), http.StatusRequestEntityTooLarge)
	})
	t.Run("an id in the body that is not a UUID is 422 naming it", func(t *testing.T) {
		p := requireProblem(t, b.do("POST", "/v1/runs", admin.access, map[string]any{"script_id": "nope", "agent_ids": []string{"x"}}), http.StatusUnprocessableEntity)
		require.Contains(t, requireField(t, p, "script_id"), "must be a UUID")
		requireField(t, p, "agent_ids[0]")
	})
	t.Run("a limit is written as a whole number", func(t *testing.T) {
		p := requireProblem(t, b.do("POST", "/v1/runs", admin.access, map[string]any{"script_id": uuid.NewString(), "vus": 2000000}), http.StatusUnprocessableEntity)
		require.Equal(t, "number must be at most 1000000", requireField(t, p, "vus"))
	})
	t.Run("bad path parameter is 400", func(t *testing.T) {
		p := requireProblem(t, b.do("DELETE", "/v1/tokens/not-a-uuid", admin.access, nil), http.StatusBadRequest)
		requireField(t, p, "id")
	})
	t.Run("bad query parameter is 400", func(t *testing.T) {
		p := requireProblem(t, b.do("GET", "/v1/tokens?limit=1000", admin.access, nil), http.StatusBadRequest)
		requireField(t, p, "limit")
		p = requireProblem(t, b.do("GET", "/v1/tokens?limit=ten", admin.access, nil), http.StatusBadRequest)
		requireField(t, p, "limit")
	})
	t.Run("bad cursor is 400", func(t *testing.T) {
		p := requireProblem(t, b.do("GET", "/v1/tokens?cursor=%21%21", admin.access, nil), http.StatusBadRequest)
		requireField(t, p, "cursor")
	})
	t.Run("unknown route is 404", func(t *testing.T) {
		requireProblem(t, b.do("GET", "/v1/nothing-here", "", nil), http.StatusNotFound)
	})
	t.Run("wrong method is 405", func(t *testing.T) {
		r := b.do("PUT", "/v1/me", admin.access, nil)
		requireProblem(t, r, http.StatusMethodNotAllowed)
		require.Equal(t, "GET, PATCH", r.header.Get("Allow"))
	})
	t.Run("empty PATCH is 422", func(t *testing.T) {
		requireProblem(t, b.do("PATCH", "/v1/me", admin.access, map[string]any{}), http.StatusUnprocessableEntity)
	})
	t.Run("license without limits is 422 naming what is missing", func(t *testing.T) {
		p := requireProblem(t, b.do("POST", "/v1/admin/invitations", admin.access, map[string]any{"license": map[string]any{"max_vus": 10}}), http.StatusUnprocessableEntity)
		require.Contains(t, requireField(t, p, "license"), "max_run_duration_seconds")
	})
	// Nothing above changed what is stored: the admin is still the only user, untouched.
	users := b.do("GET", "/v1/admin/users", admin.access, nil).json(t)
	require.Len(t, users["items"], 1)
}

func TestServiceRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.do("GET", "/healthz", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "ok", r.json(t)["status"])
	r = b.do("GET", "/readyz", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "ok", r.json(t)["checks"].(map[string]any)["database"])
	r = b.do("GET", "/openapi.yaml", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Contains(t, string(r.body), "openapi: 3.0.3")
	r = b.do("GET", "/docs", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Contains(t, r.header.Get("Content-Type"), "text/html")
	require.Contains(t, string(r.body), `spec-url="/openapi.yaml"`)
	require.NotContains(t, string(r.body), `src="http`, "the page must load nothing from elsewhere")
	require.Greater(t, len(r.body), 500_000, "Redoc is inlined")
	require.Regexp(t, `^[0-9a-f]{24}$`, r.header.Get("X-Request-ID"))
	r = b.do("GET", "/healthz", "", nil, "X-Request-ID", "abc-123")
	require.Equal(t, "abc-123", r.header.Get("X-Request-ID"))
	r = b.do("GET", "/healthz", "", nil, "X-Request-ID", "evil\" injected=1")
	require.NotContains(t, r.header.Get("X-Request-ID"), "evil")
}

// Text PostgreSQL cannot store (NUL) and control characters are refused up front, never a 500.
func TestControlCharactersAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := b.firstAdmin()
	p := requireProblem(t, b.do("POST", "/v1/tokens", admin.access, `{"name": "ci\u0000x", "scopes": ["read"]}`), http.StatusUnprocessableEntity)
	requireField(t, p, "name")
	p = requireProblem(t, b.do("POST", "/v1/admin/invitations", admin.access, `{"note": "line\u0000"}`), http.StatusUnprocessableEntity)
	requireField(t, p, "note")
	p = requireProblem(t, b.do("PATCH", "/v1/me", admin.access, `{"name": "bell\u0007"}`), http.StatusUnprocessableEntity)
	requireField(t, p, "name")
	p = requireProblem(t, b.do("POST", "/v1/admin/invitations", admin.access, `{"license": {"template": "demo", "plan": "p\u0000"}}`), http.StatusUnprocessableEntity)
	requireField(t, p, "license.plan")
	// One rule for every name, stated in the spec and kept by the handlers: an agent's name with
	// a NUL was a 422 naming no field (PostgreSQL refused it); a C1 control or nothing but spaces
	// is refused too.
	for _, body := range []string{`{"name": "a\u0000b"}`, `{"name": "a\u0085"}`, `{"name": " \u3000 "}`} {
		p = requireProblem(t, b.do("POST", "/v1/agents", admin.access, body), http.StatusUnprocessableEntity)
		requireField(t, p, "name")
		p = requireProblem(t, b.do("POST", "/v1/tokens", admin.access, `{"scopes": ["read"], `+body[1:]), http.StatusUnprocessableEntity)
		requireField(t, p, "name")
	}
	// Non-ASCII names are fine, and spaces at either end are trimmed.
	r := b.do("PATCH", "/v1/me", admin.access, `{"name": "Zoë Ångström 李"}`)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.Equal(t, "Zoë Ångström 李", r.json(t)["name"])
	r = b.do("POST", "/v1/agents", admin.access, `{"name": "  büild box 1 "}`)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	require.Equal(t, "büild box 1", r.json(t)["name"])
}

// Rules over several fields are in the spec too, and refused naming the field.
func TestRulesOverSeveralFieldsNameTheirField(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := b.firstAdmin()
	id := uuid.NewString()
	for _, body := range []map[string]any{{"vus": 1}, {"script_id": id, "test_id": id}} {
		p := requireProblem(t, b.do("POST", "/v1/runs", admin.access, body), http.StatusUnprocessableEntity)
		require.Equal(t, "give exactly one of script_id and test_id", requireField(t, p, "script_id"))
	}
	p := requireProblem(t, b.do("POST", "/v1/admin/invitations", admin.access, map[string]any{"license": map[string]any{}}), http.StatusUnprocessableEntity)
	require.Contains(t, requireField(t, p, "license"), "give a template, or every limit")
	p = requireProblem(t, b.do("POST", "/v1/admin/plugins/acme/x/versions/1.0.0/reject", admin.access, map[string]any{}), http.StatusUnprocessableEntity)
	requireField(t, p, "reason")
	p = requireProblem(t, b.do("POST", "/v1/namespaces", admin.access, map[string]any{"name": "a--b"}), http.StatusUnprocessableEntity)
	require.Contains(t, requireField(t, p, "name"), "single hyphens")
	p = requireProblem(t, b.do("POST", "/v1/targets", admin.access, map[string]any{"url": "http://example.com:65536"}), http.StatusUnprocessableEntity)
	requireField(t, p, "url")
	p = requireProblem(t, b.do("POST", "/v1/targets", admin.access, map[string]any{"url": "http://[12]"}), http.StatusUnprocessableEntity)
	requireField(t, p, "url")
	r := b.do("POST", "/v1/targets", admin.access, map[string]any{"url": "http://[::1]:8080/"})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
}
