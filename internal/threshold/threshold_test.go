package threshold_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/internal/threshold"
)

// second is one second of a run holding n requests of the label, each taking latency, failed of
// them with a 5xx.
func second(start time.Time, i int, label string, n, failed int, latency time.Duration) *metrics.Snapshot {
	st := metrics.NewStats()
	for k := range n {
		st.Requests++
		st.Latency.Record(latency)
		if k < failed {
			st.Errors[metrics.Err5xx]++
		}
	}
	return &metrics.Snapshot{Start: start.Add(time.Duration(i) * time.Second), Duration: time.Second, Labels: map[metrics.Key]*metrics.Stats{metrics.RequestKey(label): st}}
}

func thresholds(t *testing.T, srcs ...string) []*script.Threshold {
	t.Helper()
	var ts []*script.Threshold
	for _, s := range srcs {
		th, err := script.ParseThreshold(s)
		require.NoError(t, err)
		ts = append(ts, th)
	}
	return ts
}

func TestAWindowIsJudgedOnlyOnceFull(t *testing.T) {
	t.Parallel()
	ts := thresholds(t, "p95 < 100ms over 3s")
	w := threshold.New(ts)
	start := time.Unix(1_700_000_000, 0)
	total := &metrics.Snapshot{}
	// Two slow seconds of ramp-up are not judged; from the third on the window is full.
	for i, lat := range []time.Duration{time.Second, time.Second, 10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond} {
		sec := second(start, i, "r", 10, 0, lat)
		total.Merge(sec)
		require.Empty(t, w.Observe(sec, time.Duration(i+1)*time.Second), "second %d", i)
	}
	res := w.Final(total, 6*time.Second)
	require.Len(t, res, 1)
	// The window holding seconds 1 to 3 held one slow second in three: p95 is a second.
	require.False(t, res[0].Passed)
	require.Equal(t, 3*time.Second, res[0].BrokenAt)
}

// A windowed threshold reports its worst full window, not the whole run's figure, which can
// hold while a window broke it.
func TestAWindowedThresholdReportsItsWorstWindow(t *testing.T) {
	t.Parallel()
	ts := thresholds(t, "error_rate < 10% over 2s")
	w := threshold.New(ts)
	start := time.Unix(1_700_000_000, 0)
	total := &metrics.Snapshot{}
	for i, failed := range []int{0, 0, 0, 0, 3, 3, 0, 0, 0, 0} {
		sec := second(start, i, "r", 10, failed, time.Millisecond)
		total.Merge(sec)
		w.Observe(sec, time.Duration(i+1)*time.Second)
	}
	res := w.Final(total, 10*time.Second)
	require.InDelta(t, 0.30, res[0].Observed, 1e-9, "the window of seconds 5 and 6, not the run's 6%")
	require.False(t, res[0].Passed)
	require.Equal(t, "error_rate < 10% over 2s: 30.00% at worst, FAILED (first at 5s)", res[0].String())
}

func TestAnAbortingThresholdGivesAReasonWhenItBreaks(t *testing.T) {
	t.Parallel()
	ts := thresholds(t, "error_rate < 10%")
	ts[0].Abort = true
	w := threshold.New(ts)
	start := time.Unix(1_700_000_000, 0)
	require.Empty(t, w.Observe(second(start, 0, "r", 100, 5, time.Millisecond), time.Second))
	why := w.Observe(second(start, 1, "r", 100, 30, time.Millisecond), 2*time.Second)
	require.Contains(t, why, "error_rate < 10%")
	require.Contains(t, why, "17.50%")
}

func TestOnlyRequestsCountForAllRequests(t *testing.T) {
	t.Parallel()
	w := threshold.New(thresholds(t, "count <= 10"))
	start := time.Unix(1_700_000_000, 0)
	total := second(start, 0, "r", 10, 0, time.Millisecond)
	group := second(start, 0, "g", 10, 0, time.Millisecond)
	group.Labels = map[metrics.Key]*metrics.Stats{metrics.GroupKey("g"): group.Labels[metrics.RequestKey("g")]}
	total.Merge(group)
	res := w.Final(total, time.Second)
	require.True(t, res[0].Passed, "the group's 10 are not requests: %s", res[0])
	require.Equal(t, "count <= 10: 10, passed", res[0].String())
}
