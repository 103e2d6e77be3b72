package portal_test

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
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

// A browser that takes gzip gets the files compressed, under a tag of their own; one that does
// not, or refuses it by q=0, gets them as they are.
func TestThePortalSendsItsFilesCompressedToWhoTakesThem(t *testing.T) {
	t.Parallel()
	h := portal.Handler()
	get := func(encoding string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		r := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/assets/app.js", nil)
		if encoding != "" {
			r.Header.Set("Accept-Encoding", encoding)
		}
		h.ServeHTTP(w, r)
		require.Equal(t, http.StatusOK, w.Code)
		require.Contains(t, w.Header().Values("Vary"), "Accept-Encoding")
		return w
	}
	plain := get("")
	require.Empty(t, plain.Header().Get("Content-Encoding"))
	for _, enc := range []string{"gzip, deflate, br, zstd", "br;q=1.0, gzip;q=0.5", "*"} {
		w := get(enc)
		require.Equal(t, "gzip", w.Header().Get("Content-Encoding"), enc)
		require.NotEqual(t, plain.Header().Get("ETag"), w.Header().Get("ETag"), "another representation, another tag")
		z, err := gzip.NewReader(w.Body)
		require.NoError(t, err)
		body, err := io.ReadAll(z)
		require.NoError(t, err)
		require.Equal(t, plain.Body.String(), string(body))
	}
	for _, enc := range []string{"gzip;q=0", "br", "identity"} {
		require.Empty(t, get(enc).Header().Get("Content-Encoding"), enc)
	}
}

// The portal's budget: every file it has (the first page's and those loaded later, the wizard's)
// weighs at most 250 KB together, as a browser receives them (gzip).
func TestThePortalWeighsAtMost250KBCompressed(t *testing.T) {
	t.Parallel()
	h := portal.Handler()
	entries, err := os.ReadDir("dist")
	require.NoError(t, err)
	total := 0
	for _, e := range entries {
		path := "/assets/" + e.Name()
		if e.Name() == "index.html" {
			path = "/"
		}
		w := httptest.NewRecorder()
		r := httptest.NewRequestWithContext(t.Context(), http.MethodGet, path, nil)
		r.Header.Set("Accept-Encoding", "gzip")
		h.ServeHTTP(w, r)
		require.Equal(t, http.StatusOK, w.Code, path)
		t.Logf("%s: %d bytes compressed", e.Name(), w.Body.Len())
		total += w.Body.Len()
	}
	t.Logf("all together: %d bytes compressed", total)
	require.LessOrEqual(t, total, 250_000)
}
