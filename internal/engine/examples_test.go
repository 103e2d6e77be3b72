package engine_test

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/demoshop"
	"github.com/barrage-load/barrage/internal/engine"
	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/script"
)

// The example scripts run clean against the demo shop (`barrage demo-shop`), briefly: every
// request passes its checks, so the examples stay true.
func TestExamplesRunAgainstTheDemoShop(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(demoshop.New().Handler())
	t.Cleanup(srv.Close) // not defer: the parallel subtests run after this function returns
	for _, tc := range []struct {
		file string
		opts engine.Options
	}{
		{"shop.yaml", engine.Options{VUs: 3, Duration: time.Second}},
		{"open-model.yaml", engine.Options{Rate: 20, Duration: 2 * time.Second}},
		{"chat.yaml", engine.Options{VUs: 2, Duration: time.Second}},
		{"scenarios.yaml", engine.Options{Duration: 2 * time.Second}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for _, name := range []string{tc.file, "users.csv"} {
				data, err := os.ReadFile(filepath.Join("..", "..", "examples", "scripts", name))
				require.NoError(t, err)
				src := strings.ReplaceAll(string(data), "http://127.0.0.1:8081", srv.URL)
				// The examples' response-time checks are for a quiet machine; the test suite
				// shares two cores with the race detector.
				src = strings.ReplaceAll(src, "max_duration: 500ms", "max_duration: 1m")
				src = strings.ReplaceAll(src, "max_duration: 1s", "max_duration: 1m")
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644))
			}
			s, err := script.Load(filepath.Join(dir, tc.file), script.ParseOptions{})
			require.NoError(t, err)
			res := runScript(t, s, tc.opts)
			require.Positive(t, res.Iterations)
			for k, st := range res.Total.Labels {
				require.Zero(t, st.Failed(), "%s: %v %v", k, st.Errors, res.ErrorSamples)
			}
			for _, name := range res.Requests {
				_, ok := res.Total.Labels[metrics.RequestKey(name)]
				require.True(t, ok, "%s never ran", name)
			}
			require.Zero(t, res.Unsent)
		})
	}
}
