package summary_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/monitor"
	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/internal/summary"
)

func TestTheSteadyStateIsThePeakWithoutItsEdges(t *testing.T) {
	t.Parallel()
	closed := script.Workload{Model: script.Closed, VUs: 8, Duration: 10 * time.Second}
	from, to := summary.SteadyWindow(closed, 10*time.Second+300*time.Millisecond)
	require.Equal(t, time.Second, from)
	require.Equal(t, 9*time.Second+300*time.Millisecond, to)

	// Up to 100/s in 10s, 100/s for 20s, down in 10s: the 20s at 100/s.
	open := script.Workload{Model: script.Open, Stages: []script.Stage{
		{From: 0, To: 100, Duration: 10 * time.Second},
		{From: 100, To: 100, Duration: 20 * time.Second},
		{From: 100, To: 0, Duration: 10 * time.Second},
	}}
	from, to = summary.SteadyWindow(open, 40*time.Second)
	require.Equal(t, 10*time.Second, from)
	require.Equal(t, 30*time.Second, to)
	// A ramp to the peak and straight down: no steady state to speak of.
	spike := script.Workload{Model: script.Open, Stages: []script.Stage{{From: 0, To: 100, Duration: 10 * time.Second}, {From: 100, To: 0, Duration: 10 * time.Second}}}
	from, to = summary.SteadyWindow(spike, 20*time.Second)
	require.Nil(t, summary.NewStability(make([]float64, 20), from, to))
}

func TestThroughputThatMovesIsUnstable(t *testing.T) {
	t.Parallel()
	steady := []float64{50, 1000, 1010, 990, 1005, 995, 1000, 1012, 988, 40}
	s := summary.NewStability(steady, time.Second, 9*time.Second)
	require.NotNil(t, s)
	require.Equal(t, int64(1), s.FromS)
	require.Equal(t, int64(9), s.ToS)
	require.Equal(t, 8, s.Seconds)
	require.InDelta(t, 1000, s.MeanRPS, 0.1)
	require.Less(t, s.CV, 0.01)
	require.False(t, s.Unstable)
	require.Contains(t, s.String(), ": steady")

	// The first run of the async-I/O story: every other second the storage stalls.
	moving := []float64{50, 1000, 300, 1000, 250, 1000, 320, 990, 280, 40}
	s = summary.NewStability(moving, time.Second, 9*time.Second)
	require.Greater(t, s.CV, 0.5)
	require.True(t, s.Unstable)
	require.Contains(t, s.String(), "UNSTABLE")

	// At 9 requests/s counting alone moves the rate by a third: that is not instability.
	slow := []float64{1, 9, 12, 7, 10, 6, 11, 8, 9, 1}
	s = summary.NewStability(slow, time.Second, 9*time.Second)
	require.Greater(t, s.CV, summary.UnstableCV)
	require.InDelta(t, 2/3.0, s.Limit, 0.01)
	require.False(t, s.Unstable)

	// Too few seconds of steady state: no figure.
	require.Nil(t, summary.NewStability(steady[:5], time.Second, 4*time.Second))
}

// An unstable throughput is put down to what the target's own metrics show: a CPU mostly in
// iowait, a series that moved with (or against) the requests/s. A steady one is not explained,
// and a series that did not move with it is not named.
func TestMonitorsExplainAnUnstableThroughput(t *testing.T) {
	t.Parallel()
	var rps []float64
	iowait, load, flat := &monitor.Series{Monitor: "node", Series: `node_cpu_seconds_total{mode="iowait"}`, Unit: monitor.UnitPercent},
		&monitor.Series{Monitor: "db", Series: "pg_locks", Unit: monitor.UnitValue},
		&monitor.Series{Monitor: "db", Series: "pg_up", Unit: monitor.UnitValue}
	v := func(f float64) *float64 { return &f }
	for i := range 20 {
		r := 100.0 + 80*float64(i%2)
		rps = append(rps, r)
		iowait.Values = append(iowait.Values, v(65))
		load.Values = append(load.Values, v(300-r)) // more locks, fewer requests
		flat.Values = append(flat.Values, v(float64(i%3)))
	}
	st := summary.NewStability(rps, time.Second, 19*time.Second)
	require.True(t, st.Unstable)
	st.Explain(rps, []*monitor.Series{iowait, load, flat})
	require.Len(t, st.Causes, 2, "%v", st.Causes)
	require.Contains(t, st.Causes[0], `node: node_cpu_seconds_total{mode="iowait"} averaged 65% of the CPU time: the target was waiting on its storage`)
	require.Contains(t, st.Causes[1], "db: pg_locks moved against the throughput (correlation -1.00)")

	steady := make([]float64, 20)
	for i := range steady {
		steady[i] = 100
	}
	st = summary.NewStability(steady, time.Second, 19*time.Second)
	st.Explain(steady, []*monitor.Series{iowait, load})
	require.Empty(t, st.Causes)
}

// The live view's stability is over the latest seconds of the planned steady state: none while
// the load ramps up, nor before five such seconds; at most the last LiveWindow of them.
func TestTheLiveViewFollowsTheSteadyState(t *testing.T) {
	t.Parallel()
	open := script.Workload{Model: script.Open, Duration: 30 * time.Second, Stages: []script.Stage{
		{From: 0, To: 100, Duration: 10 * time.Second}, {From: 100, To: 100, Duration: 20 * time.Second}}}
	l := summary.NewLiveStability(open)
	for i := range int64(14) {
		require.Nil(t, l.Add(i, float64(10*i)), "second %d: ramping, or too few steady seconds", i)
	}
	st := l.Add(14, 100)
	require.NotNil(t, st)
	require.Equal(t, int64(10), st.FromS)
	require.Equal(t, int64(15), st.ToS)
	for i := int64(15); i < 29; i++ {
		st = l.Add(i, 100+float64(60*(i%2)))
	}
	require.True(t, st.Unstable)
	require.Equal(t, summary.LiveWindow, st.Seconds)
	require.Equal(t, int64(19), st.FromS)
	require.Nil(t, l.Add(29, 100), "the last second winds down")

	line := summary.Live{Elapsed: 20 * time.Second, RPS: 100, Stability: st}.String()
	require.Contains(t, line, "cv ")
	require.Contains(t, line, "UNSTABLE")
}

// A closed model's ramp-up is not steady: the window starts after it.
func TestTheClosedModelsRampUpIsNotSteady(t *testing.T) {
	t.Parallel()
	w := script.Workload{Model: script.Closed, VUs: 10, RampUp: 10 * time.Second, Duration: 20 * time.Second}
	from, to := summary.SteadyWindow(w, 20*time.Second)
	require.Equal(t, 10*time.Second, from)
	require.Equal(t, 19*time.Second, to)
	l := summary.NewLiveStability(w)
	for i := range int64(14) {
		require.Nil(t, l.Add(i, float64(i)), "second %d: ramping, or too few steady seconds", i)
	}
	require.NotNil(t, l.Add(14, 10))
}
