package portal_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/portal"
)

// Every path of the portal answers its page, and the page's assets are served beside it; all
// with the policy that lets a page run nothing but this server's own script.
func TestThePortalServesItsPageAndAssetsUnderItsPolicy(t *testing.T) {
	t.Parallel()
	h := portal.Handler()
	get := func(method, path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequestWithContext(t.Context(), method, path, nil))
		return w
	}
	for _, path := range []string{"/", "/tokens", "/signup"} {
		w := get(http.MethodGet, path)
		require.Equal(t, http.StatusOK, w.Code, path)
		require.Equal(t, "text/html; charset=utf-8", w.Header().Get("Content-Type"))
		require.Equal(t, portal.CSP, w.Header().Get("Content-Security-Policy"))
		require.Contains(t, w.Body.String(), `<script type="module" src="/assets/app.js"></script>`)
		require.NotContains(t, strings.ToLower(w.Body.String()), "<script>", "no inline script")
	}
	js := get(http.MethodGet, "/assets/app.js")
	require.Equal(t, http.StatusOK, js.Code)
	require.Equal(t, "text/javascript; charset=utf-8", js.Header().Get("Content-Type"))
	require.NotContains(t, js.Body.String(), "eval(", "the policy has no unsafe-eval")
	etag := js.Header().Get("ETag")
	require.NotEmpty(t, etag)
	again := httptest.NewRecorder()
	req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/assets/app.js", nil)
	req.Header.Set("If-None-Match", etag)
	h.ServeHTTP(again, req)
	require.Equal(t, http.StatusNotModified, again.Code)
	require.Equal(t, http.StatusOK, get(http.MethodGet, "/assets/app.css").Code)
	require.Equal(t, http.StatusNotFound, get(http.MethodGet, "/assets/missing.js").Code)
	require.Equal(t, http.StatusNotFound, get(http.MethodGet, "/assets/index.html").Code)
	require.Equal(t, http.StatusMethodNotAllowed, get(http.MethodPost, "/").Code)
	require.Equal(t, http.StatusNotFound, get(http.MethodGet, "/metrics").Code, "a path of no page is not the portal's")
}
