package run_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/run"
)

// seconds are n seconds of a generator at cpu, with late of scheduled starts late and dropped
// iterations dropped, each.
func seconds(n int, cpu float64, scheduled, late, dropped int64) []run.Health {
	out := make([]run.Health, n)
	for i := range out {
		out[i] = run.Health{CPU: cpu, Cores: 2, Scheduled: scheduled, Late: late, Dropped: dropped, LatenessMax: 30 * time.Millisecond}
	}
	return out
}

func TestTheVerdictTellsTheTargetsLimitFromTheTools(t *testing.T) {
	t.Parallel()
	// The generator idles while every VU waits on the target: the target's limit.
	v := run.Judge(seconds(4, 0.05, 200, 0, 120))
	require.False(t, v.GeneratorLimited)
	require.True(t, v.TargetLimited)
	require.Equal(t, []string{"480 of 800 iterations dropped because every VU was waiting on the target while the generator had CPU to spare: " +
		"the target could not keep up with the arrival rate (or max_vus is too low for its latency)"}, v.TargetReasons)

	// A saturated generator starves its VUs itself: the drops are the tool's.
	v = run.Judge(seconds(4, 0.95, 200, 0, 120))
	require.True(t, v.GeneratorLimited)
	require.False(t, v.TargetLimited)
	require.Contains(t, v.Reasons[0], "CPU saturated")
	require.Equal(t, "480 iterations dropped because every VU was busy", v.Reasons[1])

	// Late starts are the tool's, drops or not.
	v = run.Judge(seconds(4, 0.2, 200, 10, 0))
	require.True(t, v.GeneratorLimited)
	require.Contains(t, v.Reasons[0], "40 of 800 scheduled starts were over 10ms late")

	// Neither: the load was delivered.
	v = run.Judge(seconds(4, 0.2, 200, 0, 0))
	require.False(t, v.GeneratorLimited)
	require.False(t, v.TargetLimited)
}
