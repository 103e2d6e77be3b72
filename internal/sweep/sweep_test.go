package sweep

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// levels of a target that serves limit requests at a time, each in 10 ms.
func levels(limit int, vus ...int) []Level {
	var out []Level
	for _, n := range vus {
		x := float64(min(n, limit)) / 0.010
		p95 := 10.0 * max(1, float64(n)/float64(limit))
		out = append(out, Level{VUs: n, RPS: x, OKRPS: x, P95MS: p95, P50MS: p95, P99MS: p95, Reliability: 1, Seconds: 10, Requests: int64(x * 10)})
	}
	return out
}

// The knee of a fixed limit is the limit; the fit is stored, and the CSV marks the knee's row
// and gives the fit's rate at each level.
func TestJudgeFindsTheKneeAndWritesIt(t *testing.T) {
	t.Parallel()
	r := &Result{Levels: levels(8, 2, 4, 8, 16, 32)}
	r.judge()
	require.Equal(t, 8, r.KneeVUs)
	require.NotNil(t, r.Fit)
	require.NotNil(t, r.PeakVUs, "crosstalk: a peak")
	var b bytes.Buffer
	require.NoError(t, r.WriteCSV(&b))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 6)
	require.True(t, strings.HasPrefix(lines[3], "8,10.000,8000,800.0,800.0,10.000,10.000,10.000,0.000000,1.000000,ok,false,"), lines[3])
	require.True(t, strings.HasSuffix(lines[3], ",true,"))
	require.True(t, strings.HasSuffix(lines[4], ",false,"))
	_, err := json.Marshal(r)
	require.NoError(t, err, "no infinity reaches the JSON")
}

// A target that scales to the end of the sweep has no knee, and its fit predicts no peak.
func TestJudgeOfALinearTargetFindsNoKnee(t *testing.T) {
	t.Parallel()
	r := &Result{Levels: levels(1000, 1, 2, 4, 8)}
	r.judge()
	require.Zero(t, r.KneeVUs)
	require.Nil(t, r.PeakVUs)
	require.Contains(t, r.KneeText(), "none within the sweep")
	require.Contains(t, r.FitText(), "no peak predicted")
	_, err := json.Marshal(r)
	require.NoError(t, err)

	short := &Result{Levels: levels(8, 2, 4)}
	short.judge()
	require.Nil(t, short.Fit)
	require.Contains(t, short.FitText(), "at least 3")
}

// A level cut short is shown but not judged; a level of failures counts only its successes.
func TestJudgeLeavesOutWhatDidNotMeasureTheTarget(t *testing.T) {
	t.Parallel()
	ls := levels(8, 2, 4, 8, 16, 32)
	ls[4] = Level{VUs: 32, Stopped: "canceled"} // interrupted: nothing measured
	r := &Result{Levels: ls}
	r.judge()
	require.Equal(t, 8, r.KneeVUs, "the knee of the levels that ran")
	require.Equal(t, 4, r.Complete())
	require.Contains(t, r.KneeText(), "32 VUs was cut short (canceled): left out of the fit and the knee")

	failing := levels(1000, 1, 2, 4)
	for i := range failing {
		failing[i].ErrorRate, failing[i].OKRPS = 1, 0 // every request refused, fast
	}
	r = &Result{Levels: failing}
	r.judge()
	require.Nil(t, r.Fit, "no successful throughput to fit")
	require.Zero(t, r.KneeVUs)
	require.Contains(t, r.KneeText(), "1 VUs failed 100% of its requests")
}
