package api_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/monitor"
	"github.com/barrage-load/barrage/internal/run"
)

// Every field an agent measures reaches the server as it was measured.
func TestHealthRoundTrips(t *testing.T) {
	h := run.Health{CPU: 0.5, Cores: 4, LatenessMax: 3 * time.Millisecond, LatenessSum: 9 * time.Millisecond,
		Scheduled: 100, Late: 2, Dropped: 1, ActiveVUs: 7, BusyTime: time.Second, TargetTime: 800 * time.Millisecond}
	require.Equal(t, h, api.HealthOf(h).Health())

	older := api.HealthOf(h)
	older.TargetNs = nil // an agent that measured no target time sends neither
	require.Zero(t, older.Health().BusyTime)
}

// An agent's trace reads back as the engine traced it, NUL bytes aside, its bodies as previewed.
func TestTraceEntryRoundTrips(t *testing.T) {
	ev := run.TraceEvent{Request: "list", Method: "GET", URL: "http://127.0.0.1/x", RequestHeader: [][2]string{{"Accept", "*/*"}},
		RequestBody: []byte("q=1"), Redirects: []run.Redirect{{Status: 302, Method: "GET", URL: "http://127.0.0.1/y"}},
		Status: 200, ResponseHeader: http.Header{"Content-Type": {"text/plain"}}, ResponseBody: []byte("ok\x00"), BytesIn: 42,
		Encoding: "gzip", Decoded: 3, Duration: 1500 * time.Microsecond, Vars: map[string]string{"id": "7"}, Failures: []string{"status 201"}}
	e := api.TraceEntryOf(ev, func(b []byte) string { return string(b) })
	require.Equal(t, "ok\uFFFD", *e.ResponseBody, "no NUL reaches the store")
	back := e.Event()
	ev.ResponseBody = []byte("ok\uFFFD")
	require.Equal(t, ev, back)

	failed := api.TraceEntryOf(run.TraceEvent{Request: "r", Err: errors.New("connect refused")}, func(b []byte) string { return string(b) })
	require.Equal(t, "connect refused", failed.Event().Err.Error())
	require.Empty(t, failed.Failures, "an answer carries an empty list, never null")
	require.NotNil(t, failed.Failures)
}

// A shard's account crosses the wire whole: every field an agent writes, the server reads.
func TestShardAccountRoundTrips(t *testing.T) {
	acc := run.Account{Iterations: 10, Dropped: 1, Interrupted: 2, Unsent: 3, Exhausted: "users.csv",
		HookErrors:      []run.HookErrors{{Reason: "timeout", Count: 4}},
		ErrorSamples:    []metrics.ErrorSample{{Label: "get", Class: "connect", Message: "refused", Count: 5}},
		MonitorFailures: []monitor.Failure{{Monitor: "db", Failed: 6, LastError: "503"}},
		SweepLevels:     json.RawMessage(`[{"vus":1,"seconds":2,"requests":3,"rps":1.5,"ok_rps":1.5,"p50_ms":1,"p95_ms":2,"p99_ms":3,"error_rate":0,"reliability":1,"verdict":{"generator_limited":false,"target_limited":false},"late_start":false}]`)}
	for i := range reflect.TypeFor[run.Account]().NumField() {
		require.False(t, reflect.ValueOf(acc).Field(i).IsZero(), "give %s a value here", reflect.TypeFor[run.Account]().Field(i).Name)
	}
	wire, err := api.ShardResultOf(acc)
	require.NoError(t, err)
	stored, err := json.Marshal(wire) // as the server stores what it received
	require.NoError(t, err)
	back, err := run.ReadAccount(stored)
	require.NoError(t, err)
	require.JSONEq(t, string(acc.SweepLevels), string(back.SweepLevels))
	back.SweepLevels = acc.SweepLevels
	require.Equal(t, acc, back)
}
