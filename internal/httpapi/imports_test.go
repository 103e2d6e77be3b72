package httpapi_test

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/har"
)

// A browser's HAR of a visit to the demo shop becomes a test of the caller, its script the one
// `barrage import har` writes from the same file, and the answer says what was correlated.
func TestImportingAHARIs201WithTheCorrelations(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, u := b.adminAndUser()
	other := b.signup(b.invite(admin, map[string]any{"license": map[string]any{"template": "demo"}}), "other@example.com")
	data, err := os.ReadFile("../har/testdata/shop-chrome.har")
	require.NoError(t, err)

	created := b.do("POST", "/v1/tests/import", u.access, data)
	require.Equal(t, http.StatusCreated, created.status, "body: %s", created.body)
	imp := created.json(t)
	test := imp["test"].(map[string]any)
	require.Equal(t, "recording of 127.0.0.1:8081", test["name"])
	require.EqualValues(t, 1, test["latest_revision"])
	require.EqualValues(t, 6, imp["requests"])
	require.EqualValues(t, 4, imp["groups"])
	require.EqualValues(t, 1, imp["assets_left_out"])
	require.EqualValues(t, 1, imp["skipped"])
	var vars []string
	for _, c := range imp["correlations"].([]any) {
		c := c.(map[string]any)
		vars = append(vars, fmt.Sprintf("%s %s %s", c["variable"], c["extractor"], c["expression"]))
	}
	require.Equal(t, []string{`csrf regex name="csrf" value="([^"]+)"`, "product json $.items[0].id", "cart json $.id"}, vars)
	csrf := imp["correlations"].([]any)[0].(map[string]any)
	require.Equal(t, []any{map[string]any{"request": "POST /login", "where": "form field csrf"}}, csrf["uses"])
	require.Len(t, imp["parameters"], 4, "the email, password, query and card typed in")
	require.Empty(t, imp["missed"])

	// The stored revision is the converter's script, as the CLI writes it.
	l, err := har.Decode(data)
	require.NoError(t, err)
	want, err := har.Convert(l, har.Options{})
	require.NoError(t, err)
	rev := b.do("GET", "/v1/tests/"+test["id"].(string)+"/revisions/1", u.access, nil).json(t)
	require.Equal(t, string(want.Script), rev["source"])
	require.Equal(t, "yaml", rev["format"])

	// Named, with its assets; it is the caller's alone.
	created = b.do("POST", "/v1/tests/import?name=shop%20visit&assets=true", u.access, data)
	require.Equal(t, http.StatusCreated, created.status, "body: %s", created.body)
	require.Equal(t, "shop visit", created.json(t)["test"].(map[string]any)["name"])
	require.EqualValues(t, 7, created.json(t)["requests"], "the favicon kept")
	requireProblem(t, b.do("GET", "/v1/tests/"+test["id"].(string), other.access, nil), http.StatusNotFound)

	// The other user's secret holds the password the recording typed in: their import reads it
	// by name, and neither the answer nor the stored script holds it.
	require.Equal(t, http.StatusCreated, b.do("POST", "/v1/secrets", other.access, map[string]any{"name": "SHOP_PASSWORD", "value": "lovelace-1815"}).status)
	created = b.do("POST", "/v1/tests/import", other.access, data)
	require.Equal(t, http.StatusCreated, created.status, "body: %s", created.body)
	require.NotContains(t, string(created.body), "lovelace-1815")
	imp = created.json(t)
	require.Equal(t, []any{"SHOP_PASSWORD"}, imp["secrets"])
	require.Len(t, imp["parameters"], 3, "the password is no parameter")
	rev = b.do("GET", "/v1/tests/"+imp["test"].(map[string]any)["id"].(string)+"/revisions/1", other.access, nil).json(t)
	require.Contains(t, rev["source"], "password: ${secret.SHOP_PASSWORD}")
	require.NotContains(t, rev["source"], "lovelace-1815")
	created = b.do("POST", "/v1/tests/import", u.access, data)
	require.Equal(t, []any{}, created.json(t)["secrets"], "the first user has no such secret: the script is as recorded")
}

// A document that is not a HAR, or whose fields are wrong, is 422 naming each field; one with
// nothing to replay names the entries; a body that is not JSON is 400; no credentials, 401.
func TestABadHARIs422NamingTheField(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, u := b.adminAndUser()
	entry := func(url string, status any) string {
		return fmt.Sprintf(`{"startedDateTime": "2025-03-14T09:00:00.000Z", "time": 1, "request": {"method": "GET", "url": %q, "headers": []},
			"response": {"status": %v, "headers": [], "content": {"mimeType": "text/html", "text": "hi"}}}`, url, status)
	}
	for _, tc := range []struct{ body, field, reason string }{
		{`{}`, "log", "required"},
		{`{"log": {"version": "1.2"}}`, "log.entries", "required"},
		{`{"log": {"entries": null}}`, "log.entries", "null"},
		{`{"log": {"entries": [` + entry("/relative", 200) + `]}}`, "log.entries[0].request.url", "absolute URL"},
		{`{"log": {"entries": [` + entry("http://shop.test/", 200) + `, ` + entry("http://shop.test/", `"OK"`) + `]}}`, "log.entries[1].response.status", "integer"},
		{`{"log": {"entries": [` + entry("http://shop.test/logo.png", 200) + `]}}`, "log.entries", "no http(s) request"},
		{`{"log": {"entries": [` + entry("http://shop.test/", 0) + `]}}`, "log.entries", "no http(s) request"},
	} {
		p := requireProblem(t, b.do("POST", "/v1/tests/import", u.access, tc.body), http.StatusUnprocessableEntity)
		require.Contains(t, requireField(t, p, tc.field), tc.reason, tc.body)
	}
	requireProblem(t, b.do("POST", "/v1/tests/import", u.access, `{"log": `), http.StatusBadRequest)
	requireProblem(t, b.do("POST", "/v1/tests/import", u.access, "log: {}", "Content-Type", "application/yaml"), http.StatusUnsupportedMediaType)
	p := requireProblem(t, b.do("POST", "/v1/tests/import", u.access, "\x1f\x8b\x08\x00", "Content-Encoding", "gzip"), http.StatusUnsupportedMediaType)
	require.Contains(t, p["detail"], `Content-Encoding "gzip" is not supported`, "a compressed body is refused, not taken for garbage")
	p = requireProblem(t, b.do("POST", "/v1/tests/import", u.access, "\x1f\x8b\x08\x00", "Content-Encoding", "identity, gzip"), http.StatusUnsupportedMediaType)
	require.Contains(t, p["detail"], `Content-Encoding "gzip" is not supported`, "every coding listed is looked at")
	requireProblem(t, b.do("POST", "/v1/tests/import", "", `{"log": {"entries": []}}`), http.StatusUnauthorized)
	require.Empty(t, b.do("GET", "/v1/tests", u.access, nil).json(t)["items"], "nothing refused was stored")
}

// A HAR past the server's body limit is 413, as any upload.
func TestAHARLargerThanTheBodyLimitIs413(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{maxBody: 4096})
	_, u := b.adminAndUser()
	big := `{"log": {"entries": [], "comment": "` + strings.Repeat("x", 8192) + `"}}`
	requireProblem(t, b.do("POST", "/v1/tests/import", u.access, big), http.StatusRequestEntityTooLarge)
}

// /v1/tests/import answers POST alone: another method is 405 naming it, not a test whose id is
// "import".
func TestOtherMethodsOnTheImportRouteAre405(t *testing.T) {
	t.Parallel()
	// As served: the spec checker would take PATCH /v1/tests/import for PATCH /v1/tests/{id}.
	b := setup(t, setupOpts{asServed: true})
	_, u := b.adminAndUser()
	for _, m := range []string{"GET", "PATCH", "DELETE", "PUT"} {
		r := b.do(m, "/v1/tests/import", u.access, nil)
		requireProblem(t, r, http.StatusMethodNotAllowed)
		require.Equal(t, "POST", r.header.Get("Allow"), m)
	}
	requireProblem(t, b.do("GET", "/v1/tests/"+"0193a5e4-7b3c-7d1e-9f00-2a4b6c8d0e1f", u.access, nil), http.StatusNotFound)
}

// A user's conversions spend a budget of the server's time: past it an import is 429 with
// Retry-After, saying why, and another user's go on.
func TestConversionsSpendABudgetOfServerTime(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{conversionBudget: barrage.Rate{N: 1, Per: time.Hour}})
	admin, u := b.adminAndUser()
	data, err := os.ReadFile("../har/testdata/shop-chrome.har")
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, b.do("POST", "/v1/tests/import", u.access, data).status)
	r := b.do("POST", "/v1/tests/import", u.access, data)
	p := requireProblem(t, r, http.StatusTooManyRequests)
	require.Contains(t, p["detail"], "your recordings took the 1 seconds of conversion one user may spend in 1h0m0s")
	require.NotEmpty(t, r.header.Get("Retry-After"))
	require.Equal(t, http.StatusCreated, b.do("POST", "/v1/tests/import", admin.access, data).status, "another user's budget is their own")
}
