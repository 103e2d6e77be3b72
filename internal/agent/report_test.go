package agent

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/api"
)

// The reporter and the shard's end may send at once (the load ends during a report): each
// second reaches the server once, and neither sender drops what the other sent. They sent the
// same batch twice and then cut it twice, past the end of what was pending.
func TestReportsOfOneShardDoNotOverlap(t *testing.T) {
	t.Parallel()
	var (
		mu       sync.Mutex
		received []int64
		inFlight int
		overlap  bool
		second   = make(chan struct{})
		once     sync.Once
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body api.ShardReport
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		inFlight++
		overlap = overlap || inFlight > 1
		for _, s := range body.Seconds {
			received = append(received, s.Index)
		}
		first := len(received) == len(body.Seconds)
		mu.Unlock()
		if first {
			// Hold the first report until the second arrives, which it must not while the
			// first is in flight: the wait's bound is only there to let the test pass then.
			select {
			case <-second:
			case <-time.After(500 * time.Millisecond):
			}
		} else {
			once.Do(func() { close(second) })
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(api.ReportAnswer{})
	}))
	defer srv.Close()
	a, err := New(Config{Server: srv.URL, Token: "t"})
	require.NoError(t, err)
	sh := &shard{agent: a, job: &api.ShardJob{ShardId: uuid.New(), Lease: 1}, log: slog.New(slog.DiscardHandler),
		pending: []api.ShardSecond{{Index: 0}, {Index: 1}}}

	errs := make(chan error, 2)
	go func() { _, err := sh.send(t.Context(), nil); errs <- err }()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(received) > 0 }, 10e9, 1e6)
	go func() { _, err := sh.send(t.Context(), &api.ShardEndReport{}); errs <- err }()
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	require.False(t, overlap, "one report at a time")
	require.Equal(t, []int64{0, 1}, received, "each second once")
	require.Empty(t, sh.pending)
}

// A report the server refuses as it is (422) would be refused again: the shard is gone at once,
// and finishing it tries once, not for ten minutes.
func TestAReportRefusedAsItIsEndsTheShard(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	tries := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tries++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = w.Write([]byte(`{"type":"about:blank","title":"Validation failed","status":422,"detail":"seconds[0].snapshot: 1102 labels; at most 1000"}`))
	}))
	defer srv.Close()
	a, err := New(Config{Server: srv.URL, Token: "t"})
	require.NoError(t, err)
	sh := &shard{agent: a, job: &api.ShardJob{ShardId: uuid.New(), Lease: 1}, log: slog.New(slog.DiscardHandler),
		pending: []api.ShardSecond{{Index: 0}}}
	_, err = sh.send(t.Context(), nil)
	require.ErrorContains(t, err, "1102 labels; at most 1000")
	require.True(t, sh.isGone())
	sh.finish(t.Context(), &api.ShardEndReport{Reason: api.StopReasonFailed})
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 2, tries, "one report, then one try at the shard's end")
}
