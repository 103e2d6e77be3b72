package engine_test

import (
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/engine"
)

func TestMultipartAndFileBodies(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	photo := make([]byte, 300<<10)
	for i := range photo {
		photo[i] = byte(i * 7)
	}
	writeFiles(t, dir, map[string][]byte{"files/photo.png": photo, "files/order.bin": []byte("\x00\x01binary order\xff")})
	var mu sync.Mutex
	var got []string
	mux := http.NewServeMux()
	mux.HandleFunc("/upload", func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f, h, err := r.FormFile("photo")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		data, _ := io.ReadAll(f)
		mu.Lock()
		got = append(got, fmt.Sprintf("%s|%s|%s|%s|%x", r.FormValue("title"), r.FormValue("user"), h.Filename, h.Header.Get("Content-Type"), sha256.Sum256(data)))
		mu.Unlock()
	})
	mux.HandleFunc("/again", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/raw", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/raw", func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %q", r.Header.Get("Content-Type"), data)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	s := load(t, dir, srv.URL, `
version: 1
variables: { constants: { who: ada } }
session:
  groups:
    - name: g
      requests:
        - name: upload
          method: POST
          url: "${target}/upload"
          body:
            multipart:
              title: Holiday
              user: "${who}"
              photo: { file: files/photo.png, filename: beach.png, content_type: image/png }
        - name: raw
          method: PUT
          url: "${target}/again"
          redirects: 1
          body: { file: files/order.bin }
          assert: [ { body_contains: 'application/octet-stream "\x00\x01binary order\xff"' } ]
load: { vus: 2, iterations: 4 }
`)
	require.Equal(t, []string{"files/order.bin", "files/photo.png"}, s.Files())
	res := runScript(t, s, engine.Options{})
	for _, name := range []string{"upload", "raw"} {
		st := stats(t, res, name)
		require.Equal(t, int64(4), st.Requests)
		require.Zero(t, st.Failed(), "%s: %v %v", name, st.Errors, res.ErrorSamples)
	}
	require.Greater(t, stats(t, res, "upload").BytesOut, int64(4*len(photo)))
	want := fmt.Sprintf("Holiday|ada|beach.png|image/png|%x", sha256.Sum256(photo))
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{want, want, want, want}, got)
}

// A 50 MB file uploaded by 100 VUs at once is held once: the generator's allocations are a small
// part of one copy, where a body held whole per VU would allocate 5 GB.
func TestAnUploadIsStreamedNotHeldPerVU(t *testing.T) {
	if testing.Short() {
		t.Skip("uploads 5 GB over the loopback")
	}
	dir := t.TempDir()
	big := make([]byte, 50<<20)
	writeFiles(t, dir, map[string][]byte{"big.bin": big})
	var received atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		received.Add(n)
	}))
	defer srv.Close()
	s := load(t, dir, srv.URL, `
version: 1
session:
  groups:
    - name: g
      requests:
        - { name: upload, method: POST, url: "${target}/", timeout: 2m, body: { multipart: { note: big, data: { file: big.bin } } } }
load: { vus: 100, iterations: 100 }
`)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	// Bounded by the requests' own timeout, not by runScript's minute: 5 GB take most of a
	// minute on a loaded machine with the race detector (63 s once).
	res, err := engine.Run(t.Context(), s, engine.Options{})
	require.NoError(t, err)
	runtime.ReadMemStats(&after)
	st := stats(t, res, "upload")
	require.Equal(t, int64(100), st.Requests)
	require.Zero(t, st.Failed(), "%v", res.ErrorSamples)
	require.Greater(t, received.Load(), int64(100*len(big)))
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d MB while sending %d MB", allocated>>20, st.BytesOut>>20)
	require.Less(t, allocated, uint64(len(big)), "the server's and the generator's allocations together stay below one copy of the file")
}

// A body's file is read when the script is loaded: a script only parsed is refused before the
// run.
func TestABodyFileMustBeLoaded(t *testing.T) {
	t.Parallel()
	s := parse(t, "http://127.0.0.1:9", `
version: 1
session: { groups: [ { name: g, requests: [ { name: r, method: POST, url: "${target}/", body: { file: x.bin } } ] } ] }
load: { vus: 1, iterations: 1 }
`)
	_, err := engine.Run(t.Context(), s, engine.Options{})
	require.ErrorContains(t, err, "body file x.bin was not loaded")
}
