package main_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/e2etest"
	"github.com/barrage-load/barrage/internal/targettest"
)

func TestRunExitStatusesAndOutputs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello") }))
	defer srv.Close()
	dir := t.TempDir()

	out, errOut, code := e2etest.RunCLI(t, "run", "--out", filepath.Join(dir, "r.json"), "--csv", filepath.Join(dir, "s.csv"),
		e2etest.WriteScript(t, srv.URL, "  - p95 < 5s\n  - error_rate < 1%"))
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", out, errOut)
	for _, want := range []string{"get home", "get greeting", "all requests", "group home", "p99", "p95 < 5s:", "passed", "generator"} {
		require.Contains(t, out, want)
	}
	require.Regexp(t, `(?m)^\s+1s\s+vus\s+\d+\s+\d+ req/s\s+p50`, errOut, "a live line each second")
	var res struct {
		Total struct {
			Count int64   `json:"count"`
			P99MS float64 `json:"p99_ms"`
			RPS   float64 `json:"rps"`
		} `json:"total"`
		Requests []struct{ Name string } `json:"requests"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "r.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &res))
	require.Greater(t, res.Total.Count, int64(10))
	require.Greater(t, res.Total.RPS, 5.0)
	require.Len(t, res.Requests, 2)
	csv, err := os.ReadFile(filepath.Join(dir, "s.csv"))
	require.NoError(t, err)
	require.Contains(t, string(csv), "second,kind,label,count")
	require.Contains(t, string(csv), ",get greeting,")

	_, _, code = e2etest.RunCLI(t, "run", "--quiet", e2etest.WriteScript(t, srv.URL, "  - rps > 1000000"))
	require.Equal(t, 99, code, "a failed threshold has its own exit status")

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("version: 2\nsession: {}\n"), 0o644))
	_, errOut, code = e2etest.RunCLI(t, "run", bad)
	require.Equal(t, 65, code, "an invalid script has its own exit status")
	require.Contains(t, errOut, "version")

	_, _, code = e2etest.RunCLI(t, "run")
	require.Equal(t, 2, code, "usage")
}

// serve on a busy address fails at once, before it unpacks a database or prints a code; wrong
// flags of any command are wrong usage, exit status 2.
func TestServeBindsFirstAndWrongFlagsAreUsage(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	data := t.TempDir()
	out, errOut, code := e2etest.RunWithEnv(t, []string{"BARRAGE_DATA_DIR=" + data}, "serve", "--addr", ln.Addr().String())
	require.Equal(t, 1, code, "stdout: %s\nstderr: %s", out, errOut)
	require.Contains(t, errOut, "address already in use")
	require.NotContains(t, out, "invitation code")
	entries, err := os.ReadDir(data)
	require.NoError(t, err)
	require.Empty(t, entries, "no database was unpacked")

	// -h and --help are a request: the usage, and exit 0.
	for _, args := range [][]string{{"serve", "--help"}, {"run", "-h"}, {"runs", "start", "--help"}, {"tests", "debug", "-h"}, {"runs", "--help"}} {
		_, errOut, code = e2etest.RunWithEnv(t, []string{"BARRAGE_DATA_DIR=" + data}, args...)
		require.Equal(t, 0, code, "%v: %s", args, errOut)
		require.Contains(t, errOut, "Usage", "%v", args)
		require.NotContains(t, errOut, "barrage: ", "%v", args)
	}
	for _, args := range [][]string{{"serve", "--bogus"}, {"run", "--bogus", "x.yaml"}, {"migrate", "up", "--bogus"}} {
		_, errOut, code = e2etest.RunWithEnv(t, []string{"BARRAGE_DATA_DIR=" + data}, args...)
		require.Equal(t, 2, code, "%v: %s", args, errOut)
		require.Contains(t, errOut, "flag provided but not defined: -bogus")
		require.NotContains(t, errOut, "barrage: ", "said once, by the flag package")
	}
}

// In the open model a VU runs only while an iteration does: the live line and the series show
// the most at once in each second, not the few still running at its end. A script without a name
// is named after its file.
func TestAnOpenModelRunShowsItsVUs(t *testing.T) {
	target := targettest.Slow(t, 5*time.Millisecond) // one VU busy a fifth of the time: mostly none at a second's end
	dir := t.TempDir()
	path := filepath.Join(dir, "checkout.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`version: 1
session: { groups: [ { name: g, requests: [ { name: r, url: "`+target+`/" } ] } ] }
load: { rate: 40/s, duration: 3s, max_vus: 20 }
`), 0o644))
	out, errOut, code := e2etest.RunCLI(t, "run", "--out", filepath.Join(dir, "r.json"), path)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", out, errOut)
	require.Contains(t, out, "\ncheckout: open model")
	var res struct {
		Series []struct {
			Second   int64
			Requests int64
			VUs      int64 `json:"vus"`
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "r.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &res))
	for _, p := range res.Series {
		if p.Requests > 0 {
			require.GreaterOrEqual(t, p.VUs, int64(1), "second %d", p.Second)
		}
	}
	require.Regexp(t, `(?m)^ +1s  vus +[1-9]`, errOut, "the live line")
}

func TestDebugTracesOneIteration(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Served-By", "test")
		fmt.Fprint(w, "hello")
	}))
	defer srv.Close()
	out, errOut, code := e2etest.RunCLI(t, "debug", e2etest.WriteScript(t, srv.URL, "  - p95 < 5s"))
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", out, errOut)
	require.Contains(t, out, "=== get home")
	require.Contains(t, out, "> GET "+srv.URL+"/\n")
	require.Contains(t, out, "< 200")
	require.Contains(t, out, "< X-Served-By: test")
	require.Contains(t, out, `var greeting = "hello"`)
	require.Contains(t, out, "> GET "+srv.URL+"/hello")
	require.Equal(t, 2, strings.Count(out, "==="), "one iteration of one VU")
}

func TestDebugShowsEveryHopAndTheDecodedBody(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	mux := http.NewServeMux()
	mux.HandleFunc("/r", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		http.Redirect(w, r, "/dest", http.StatusFound)
	})
	mux.HandleFunc("/dest", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		fmt.Fprint(zw, `{"arrived":true}`)
		zw.Close()
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(buf.Bytes())
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "s.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`version: 1
session:
  groups:
    - name: g
      requests:
        - { name: post, method: POST, url: "`+srv.URL+`/r", body: { form: { a: "1" } }, redirects: 2 }
load: { vus: 1, iterations: 1 }
`), 0o644))
	out, errOut, code := e2etest.RunCLI(t, "debug", path)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", out, errOut)
	mu.Lock()
	require.Equal(t, []string{"POST /r", "GET /dest"}, seen)
	mu.Unlock()
	require.Contains(t, out, "> POST "+srv.URL+"/r\n")
	require.Contains(t, out, "< 302, followed\n> GET "+srv.URL+"/dest\n< 200")
	require.Contains(t, out, "(body came gzip-compressed: 16 bytes decoded; shown decoded)\n")
	require.Contains(t, out, `{"arrived":true}`)
}

// -e gives the script's environment variables for one run, before the process environment.
func TestRunTakesEnvironmentVariablesWithE(t *testing.T) {
	t.Parallel()
	var paths sync.Map
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { paths.Store(r.URL.Path, true) }))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "aimed.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`version: 1
name: aimed
variables:
  env:
    target: TARGET_URL
    page: { from: PAGE, default: /default }
session: { groups: [ { name: g, requests: [ { name: r, url: "${target}${page}" } ] } ] }
load: { vus: 1, iterations: 1 }
`), 0o644))
	_, errOut, code := e2etest.RunCLI(t, "run", path)
	require.Equal(t, 65, code, errOut)
	require.Contains(t, errOut, "environment variable TARGET_URL is not set and has no default")

	_, errOut, code = e2etest.RunWithEnv(t, []string{"PAGE=/from-env"}, "run", "-e", "TARGET_URL="+srv.URL, "-e", "PAGE=/from-flag", path)
	require.Equal(t, 0, code, errOut)
	_, hit := paths.Load("/from-flag")
	require.True(t, hit, "-e wins over the environment")

	_, errOut, code = e2etest.RunCLI(t, "run", "-e", "TARGET_URL", path)
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "want NAME=VALUE")
	_, errOut, code = e2etest.RunCLI(t, "run", "-e", "TARGET_URL="+srv.URL, "-e", "PAEG=/typo", path)
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "-e PAEG: the script reads no environment variable of this name")
}

// --rate without --vus makes a closed script open: the max VUs the engine chose is said, and
// --vus sets it.
func TestRateWithoutVUsSaysTheVUsChosen(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	path := e2etest.WriteScript(t, srv.URL, "  - p99 < 5s")
	_, errOut, code := e2etest.RunCLI(t, "run", "--quiet", "--rate", "5", "--duration", "1s", path)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "The open model may use up to 100 VUs at once (max_vus): --vus N sets another.")
	_, errOut, code = e2etest.RunCLI(t, "run", "--quiet", "--rate", "5", "--vus", "3", "--duration", "1s", path)
	require.Equal(t, 0, code, errOut)
	require.NotContains(t, errOut, "max_vus")
}
