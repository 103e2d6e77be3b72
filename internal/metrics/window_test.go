package metrics_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/metrics"
)

// second is a one-second snapshot of label "a" whose requests all took d.
func second(i int, d time.Duration, n int64) *metrics.Snapshot {
	st := metrics.NewStats()
	st.Requests = n
	st.Latency.RecordN(d, n)
	return &metrics.Snapshot{Start: t0.Add(time.Duration(i) * time.Second), Duration: time.Second,
		Labels: map[metrics.Key]*metrics.Stats{metrics.RequestKey("a"): st}}
}

// A threshold over the last 30 s reads its percentile from the merge of exactly those seconds.
func TestWindowMergesTheTrailingSpan(t *testing.T) {
	t.Parallel()
	w := metrics.NewWindow(30 * time.Second)
	require.Empty(t, w.Merged().Labels)

	// 40 seconds: the first 10 are slow, the last 30 fast, so the window must forget the slow ones.
	for i := range 40 {
		d := 10 * time.Millisecond
		if i < 10 {
			d = time.Second
		}
		w.Add(second(i, d, 100))
	}
	require.Equal(t, 30, w.Len())
	m := w.Merged()
	require.Equal(t, t0.Add(10*time.Second), m.Start)
	require.Equal(t, 30*time.Second, m.Duration)
	require.Equal(t, int64(3000), m.Labels[metrics.RequestKey("a")].Requests)
	require.Equal(t, 10*time.Millisecond, m.Labels[metrics.RequestKey("a")].Latency.Quantile(0.95))

	want := &metrics.Snapshot{}
	for i := 10; i < 40; i++ {
		want.Merge(second(i, 10*time.Millisecond, 100))
	}
	require.Equal(t, marshal(t, want), marshal(t, m))

	// A late second from another agent joins if it is still inside the span, and is dropped if not.
	w.Add(second(20, time.Second, 100))
	w.Add(second(5, time.Second, 100))
	require.Equal(t, 31, w.Len())
	m = w.Merged()
	require.Equal(t, int64(3100), m.Labels[metrics.RequestKey("a")].Requests)
	require.Equal(t, time.Second, m.Labels[metrics.RequestKey("a")].Latency.Quantile(0.99))

	// A later second pushes the window on.
	w.Add(second(45, time.Millisecond, 1))
	require.Equal(t, 26, w.Len()) // seconds 16-39, the late 20 and 45
	require.Equal(t, t0.Add(16*time.Second), w.Merged().Start)
}

func TestSnapshotMergeTakesTheCoveringInterval(t *testing.T) {
	t.Parallel()
	a, b := second(3, time.Millisecond, 1), second(1, time.Millisecond, 2)
	b.Labels[metrics.RequestKey("b")] = metrics.NewStats()
	a.Merge(b)
	require.Equal(t, t0.Add(time.Second), a.Start)
	require.Equal(t, 3*time.Second, a.Duration)
	require.Equal(t, t0.Add(4*time.Second), a.End())
	require.Equal(t, int64(3), a.Labels[metrics.RequestKey("a")].Requests)
	require.Contains(t, a.Labels, metrics.RequestKey("b"))

	// Merged stats share nothing with their source.
	b.Labels[metrics.RequestKey("b")].Latency.Record(time.Second)
	require.Zero(t, a.Labels[metrics.RequestKey("b")].Latency.Count())

	var empty metrics.Snapshot
	empty.Merge(b)
	require.Equal(t, b.Start, empty.Start)
	require.Equal(t, b.Duration, empty.Duration)
	require.Equal(t, int64(2), empty.Requests().Requests)
}
