package httpapi_test

import (
	"net/http"
	"testing"
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
