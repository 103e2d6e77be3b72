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
