package httpapi_test

import (
	"crypto/rand"
	"io"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkGetMeWithToken measures an authenticated read end to end through the handler stack:
// routing, token lookup in PostgreSQL, validation, encoding. Run with -cpu to vary parallelism.
func BenchmarkGetMeWithToken(b *testing.B) {
	bundle := setup(b)
	admin := bundle.firstAdmin()
	r := bundle.do("POST", "/v1/tokens", admin.access, map[string]any{"name": "bench", "scopes": []string{"read"}})
	if r.status != http.StatusCreated {
		b.Fatalf("create token: %d %s", r.status, r.body)
	}
	token := secret(r.json(bundle.t)["token"].(string))
	client := bundle.srv.Client()
	client.Transport.(*http.Transport).MaxIdleConnsPerHost = 64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req, _ := http.NewRequest("GET", bundle.srv.URL+"/v1/me", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		for pb.Next() {
			res, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				b.Errorf("status %d", res.StatusCode)
				return
			}
		}
	})
}

// BenchmarkDownloadArtifact downloads a 50 MB plugin artifact through the whole handler stack
// from the local blob store, checked against its sha256 on the way out (the marketplace's bar:
// 200 MB/s). It reports how far the heap grew above where it stood before the transfers
// (heap-growth-MB): the artifact is streamed, never held, so it stays far below 50.
func BenchmarkDownloadArtifact(b *testing.B) {
	bundle := setup(b, setupOpts{maxPluginBytes: 64 << 20, asServed: true})
	admin, u := bundle.adminAndUser()
	key := bundle.author(u, "acme")
	payload := make([]byte, 50<<20)
	_, _ = rand.Read(payload)
	ver := randomData(key, "1.0.0")
	ver.artifacts = []artifact{{os: "linux", arch: "amd64", format: "elf", data: tinyELF("amd64", string(payload))}}
	if r := bundle.publish(u.access, ver); r.status != http.StatusCreated {
		b.Fatalf("publish: %d %s", r.status, r.body)
	}
	if r := bundle.do("POST", "/v1/admin/plugins/acme/random-data/versions/1.0.0/approve", admin.access, nil); r.status != http.StatusOK {
		b.Fatalf("approve: %d %s", r.status, r.body)
	}
	url := bundle.srv.URL + "/v1/plugins/acme/random-data/versions/1.0.0/download/linux/amd64/file"
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // the heap in use, sampled while the transfers run
		defer close(sampled)
		var m runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
		}
	}()
	b.SetBytes(int64(len(ver.artifacts[0].data)))
	b.ResetTimer()
	for range b.N {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+u.access)
		res, err := bundle.srv.Client().Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if err != nil || n != int64(len(ver.artifacts[0].data)) || res.StatusCode != http.StatusOK {
			b.Fatalf("download: status %d, %d bytes, %v", res.StatusCode, n, err)
		}
	}
	b.StopTimer()
	close(done)
	<-sampled
	growth := float64(0)
	if p := peak.Load(); p > before.HeapInuse {
		growth = float64(p-before.HeapInuse) / (1 << 20)
	}
	b.ReportMetric(growth, "heap-growth-MB")
}
