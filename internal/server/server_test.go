package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/config"
	"github.com/barrage-load/barrage/internal/pgtest"
	"github.com/barrage-load/barrage/internal/server"
)

// Serve composed in the test's own process: it serves the API and the portal on its address,
// hands the first admin's code to the console and not the log, tells admins the target settings
// it started with, and shuts down when told.
func TestAServerServesAndShutsDownInProcess(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"DATABASE_URL": pgtest.URL(t), "BARRAGE_DESTINATION_MAX_VUS": "250"}
	cfg, err := config.Load("serve", []string{"--addr", "127.0.0.1:0", "--data-dir", dir,
		"--jwt-key-file", filepath.Join(dir, "jwt.key"), "--secret-keys-file", filepath.Join(dir, "secret.keys"),
		"--open-targets", "shop.example:443,api.example:8443"},
		func(k string) string { return env[k] }, io.Discard)
	require.NoError(t, err)
	var console bytes.Buffer
	logs := &lockedBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))

	ctx, stop := context.WithCancel(t.Context())
	srv, err := server.Open(ctx, cfg, log, &console, "test")
	require.NoError(t, err)
	require.NoError(t, srv.Start(ctx))
	waited := make(chan error, 1)
	go func() { waited <- srv.Wait(ctx) }()

	for _, path := range []string{"/healthz", "/readyz", "/", "/openapi.yaml", "/docs"} {
		res, err := http.Get(srv.URL() + path)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode, path)
	}
	code := strings.TrimSpace(console.String()[strings.LastIndex(console.String(), ":")+1:])
	require.NotEmpty(t, code, "the first admin's code is on the console")
	require.NotContains(t, logs.text(), code, "and never in the log")

	// The first admin reads the target settings serve was started with.
	post := func(path, body string) *http.Response {
		t.Helper()
		res, err := http.Post(srv.URL()+path, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		return res
	}
	res := post("/v1/auth/signup", `{"invitation_code": "`+code+`", "email": "ada@example.com", "password": "a long enough password", "name": "Ada"}`)
	res.Body.Close()
	require.Equal(t, http.StatusAccepted, res.StatusCode)
	res = post("/v1/auth/login", `{"email": "ada@example.com", "password": "a long enough password"}`)
	var session struct {
		AccessToken string `json:"access_token"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&session))
	res.Body.Close()
	req, err := http.NewRequestWithContext(t.Context(), "GET", srv.URL()+"/v1/admin/targets", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+session.AccessToken)
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, "body: %s", body)
	require.JSONEq(t, `{"open": ["api.example:8443", "shop.example:443"], "open_all": false, "max_vus_per_address": 250}`, string(body))

	stop()
	require.NoError(t, <-waited)
	_, err = http.Get(srv.URL() + "/healthz")
	require.Error(t, err, "nothing listens once it has shut down")
}

// lockedBuffer is a log that the server's goroutines write while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) text() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
