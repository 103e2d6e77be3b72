package engine_test

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/engine"
	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/run"
)

// compress encodes b in enc as a server would.
func compress(t testing.TB, enc string, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	switch enc {
	case "gzip":
		w = gzip.NewWriter(&buf)
	case "deflate":
		w = zlib.NewWriter(&buf)
	case "raw-deflate":
		w, _ = flate.NewWriter(&buf, flate.BestSpeed)
	case "br":
		w = brotli.NewWriter(&buf)
	case "zstd":
		zw, err := zstd.NewWriter(&buf)
		require.NoError(t, err)
		w = zw
	default:
		t.Fatalf("no encoder for %s", enc)
	}
	_, err := w.Write(b)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.Bytes()
}

// compressingServer answers every request with body, encoded as the path names (/gzip, /br,
// /raw-deflate...), and keeps the Accept-Encoding each request sent.
type compressingServer struct {
	*httptest.Server
	mu     sync.Mutex
	accept []string
}

func newCompressingServer(t *testing.T, body []byte, chunked bool) *compressingServer {
	cs := &compressingServer{}
	encoded := map[string][]byte{}
	for _, enc := range []string{"gzip", "deflate", "raw-deflate", "br", "zstd"} {
		encoded[enc] = compress(t, enc, body)
	}
	cs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cs.mu.Lock()
		cs.accept = append(cs.accept, strings.Join(r.Header.Values("Accept-Encoding"), ","))
		cs.mu.Unlock()
		enc := strings.TrimPrefix(r.URL.Path, "/")
		b, ok := encoded[enc]
		if !ok {
			b = body
		}
		w.Header().Set("Content-Type", "application/json")
		if ok {
			w.Header().Set("Content-Encoding", strings.TrimPrefix(enc, "raw-"))
		}
		if chunked {
			w.(http.Flusher).Flush() // no Content-Length: the body comes chunked
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(cs.Close)
	return cs
}

func TestCompressedBodiesAreDecodedForChecks(t *testing.T) {
	t.Parallel()
	body := []byte(`{"user":{"name":"ada","token":"` + strings.Repeat("x", 3000) + `"}}`)
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			t.Parallel()
			srv := newCompressingServer(t, body, chunked)
			var reqs strings.Builder
			for _, enc := range []string{"gzip", "deflate", "raw-deflate", "br", "zstd", "plain"} {
				fmt.Fprintf(&reqs, `
        - name: %[1]s
          url: "${target}/%[1]s"
          extract: [ { var: name_%[2]s, json: "$.user.name" } ]
          assert: [ { json: "$.user.name", equals: ada }, { body_contains: '"token":"xxx' } ]`, enc, strings.ReplaceAll(enc, "-", "_"))
			}
			s := parse(t, srv.URL, `
version: 1
session:
  groups:
    - name: g
      requests:`+reqs.String()+`
load: { vus: 2, iterations: 6 }
`)
			res := runScript(t, s, engine.Options{})
			for _, enc := range []string{"gzip", "deflate", "raw-deflate", "br", "zstd", "plain"} {
				st := stats(t, res, enc)
				require.Equal(t, int64(6), st.Requests, enc)
				require.Zero(t, st.Failed(), "%s: %v", enc, st.Errors)
				// Bytes in are the wire's: a compressed body is counted at its compressed size.
				if enc != "plain" {
					require.Less(t, st.BytesIn, stats(t, res, "plain").BytesIn/2, enc)
				}
			}
			srv.mu.Lock()
			defer srv.mu.Unlock()
			for _, a := range srv.accept {
				require.Equal(t, engine.AcceptEncoding, a)
			}
		})
	}
}

func TestTheScriptChoosesAcceptEncoding(t *testing.T) {
	t.Parallel()
	srv := newCompressingServer(t, []byte(`{}`), false)
	s := parse(t, srv.URL, `
version: 1
session:
  headers: { Accept-Encoding: gzip }
  groups:
    - name: g
      requests:
        - { name: session, url: "${target}/plain" }
        - { name: none, url: "${target}/plain", headers: { accept-encoding: "" } }
load: { vus: 1, iterations: 1 }
`)
	runScript(t, s, engine.Options{})
	srv.mu.Lock()
	defer srv.mu.Unlock()
	require.Equal(t, []string{"gzip", ""}, srv.accept)
}

func TestACompressionBombIsStoppedAtTheCap(t *testing.T) {
	t.Parallel()
	// 64 MiB of zeros in about 64 KB of gzip, 21 KB of zstd: over a thousand times.
	zeros := make([]byte, 64<<20)
	bombs := map[string][]byte{"gzip": compress(t, "gzip", zeros), "zstd": compress(t, "zstd", zeros)}
	zeros = nil
	var sent sync.Map
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		enc := strings.TrimPrefix(r.URL.Path, "/")
		w.Header().Set("Content-Encoding", enc)
		n, _ := w.Write(bombs[enc])
		sent.Store(enc, n)
	}))
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
session:
  groups:
    - name: g
      requests:
        - { name: gzip, url: "${target}/gzip", assert: [ { body_contains: "1" } ] }
        - { name: zstd, url: "${target}/zstd", assert: [ { body_contains: "1" } ] }
        - { name: unread, url: "${target}/gzip" }
load: { vus: 1, iterations: 1 }
`)
	var failures []string
	err := engine.Debug(context.Background(), s, engine.Options{Trace: func(ev run.TraceEvent) {
		if ev.Err != nil {
			failures = append(failures, ev.Request+": "+ev.Err.Error())
		}
	}})
	require.NoError(t, err)
	require.Len(t, failures, 3, "a traced request reads its body, so each is decoded")
	for _, f := range failures {
		require.Contains(t, f, "a compression bomb?")
	}
	require.Contains(t, failures[0], "gzip body decoded to more than 1048576 bytes")

	// In a run, the bomb fails its request as a check, and a request that reads no body is not
	// decoded at all: the bytes are counted as they came.
	res := runScript(t, s, engine.Options{})
	for _, name := range []string{"gzip", "zstd"} {
		st := stats(t, res, name)
		require.Equal(t, int64(1), st.Errors[metrics.ErrAssertion], name)
	}
	require.Zero(t, stats(t, res, "unread").Failed())
}

func TestACorruptBodyFailsItsChecks(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		fmt.Fprint(w, "this is not gzip")
	}))
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
session:
  groups:
    - name: g
      requests:
        - { name: checked, url: "${target}/", assert: [ { body_contains: gzip } ] }
load: { vus: 1, iterations: 1 }
`)
	var ev run.TraceEvent
	require.NoError(t, engine.Debug(context.Background(), s, engine.Options{Trace: func(e run.TraceEvent) { ev = e }}))
	require.ErrorContains(t, ev.Err, "gzip body does not decode")
	require.Equal(t, http.StatusOK, ev.Status)
	require.Equal(t, "gzip", ev.ResponseHeader.Get("Content-Encoding"), "the headers say how it came")
	res := runScript(t, s, engine.Options{})
	require.Equal(t, int64(1), stats(t, res, "checked").Errors[metrics.ErrAssertion])
}

func TestDebugShowsTheDecodedBodyAndBothSizes(t *testing.T) {
	t.Parallel()
	body := []byte(`{"items":[` + strings.Repeat(`{"sku":"A-1","qty":1},`, 200) + `{}]}`)
	srv := newCompressingServer(t, body, false)
	s := parse(t, srv.URL, `
version: 1
session:
  groups:
    - name: g
      requests:
        - { name: br, url: "${target}/br" }
load: { vus: 1, iterations: 1 }
`)
	var ev run.TraceEvent
	require.NoError(t, engine.Debug(context.Background(), s, engine.Options{Trace: func(e run.TraceEvent) { ev = e }}))
	require.NoError(t, ev.Err)
	require.Equal(t, "br", ev.Encoding)
	require.Equal(t, body, ev.ResponseBody)
	require.Equal(t, int64(len(body)), ev.Decoded)
	require.Less(t, ev.BytesIn, int64(len(body))/4, "the wire carried the compressed body")
	require.Contains(t, ev.RequestHeader, [2]string{"Accept-Encoding", engine.AcceptEncoding})
}
