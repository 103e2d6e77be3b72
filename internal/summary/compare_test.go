package summary_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/summary"
)

// result is a run of one request at rps, with p95 p95 ms, whose seconds wobble by wobble
// (relative) around those.
func result(rps, p95, wobble float64, names ...string) *summary.Result {
	r := &summary.Result{}
	for i := range 12 {
		w := 1 + wobble*float64(i%2*2-1)
		r.Series = append(r.Series, summary.Point{Second: int64(i + 1), Requests: int64(rps * w), RPS: rps * w, P50MS: p95 / 2 * w, P95MS: p95 * w, P99MS: p95 * 1.5 * w})
	}
	l := summary.Label{Name: "all requests", RPS: rps, P50MS: p95 / 2, P95MS: p95, P99MS: p95 * 1.5}
	r.Total = l
	for _, n := range names {
		l.Name = n
		r.Requests = append(r.Requests, l)
	}
	return r
}

func TestACompareJudgesAgainstToleranceAndNoise(t *testing.T) {
	t.Parallel()
	base := result(1000, 10, 0.01, "checkout", "home")
	c := summary.Compare(base, result(1000, 10.2, 0.01, "checkout", "home"), summary.DefaultTolerances)
	require.Equal(t, summary.Unchanged, c.Verdict)
	require.Len(t, c.Requests, 2)

	c = summary.Compare(base, result(1000, 13, 0.01, "checkout", "home"), summary.DefaultTolerances)
	require.Equal(t, summary.Regressed, c.Verdict)
	p95 := c.Total.Changes[2]
	require.Equal(t, "p95_ms", p95.Metric)
	require.InDelta(t, 0.3, p95.Change, 1e-9)
	require.Equal(t, summary.Regressed, p95.Verdict)

	// The same 30%, in runs whose seconds swing by half: within the noise.
	c = summary.Compare(result(1000, 10, 0.5, "checkout"), result(1000, 13, 0.5, "checkout"), summary.DefaultTolerances)
	require.Equal(t, summary.Unchanged, c.Verdict)
	require.Greater(t, c.Total.Changes[2].Noise, 0.3)

	// Faster and more: improved; a request one run lacks is named.
	c = summary.Compare(base, result(1300, 7, 0.01, "checkout", "search"), summary.DefaultTolerances)
	require.Equal(t, summary.Improved, c.Verdict)
	require.Equal(t, summary.Improved, c.Total.Changes[0].Verdict, "requests/s up is better")
	require.Equal(t, []string{"home (base only)", "search (new only)"}, c.Only)
}

// Each request is judged on its own seconds when the results carry them: a steady request keeps
// a small noise however much another one swings, and its real change is caught.
func TestEachRequestIsJudgedOnItsOwnNoise(t *testing.T) {
	t.Parallel()
	withSeries := func(steadyP95 float64) *summary.Result {
		r := result(1000, 10, 0.5, "steady", "swinging") // the whole swings by half
		r.RequestSeries = map[string][]summary.Point{
			"steady":   result(500, steadyP95, 0.01).Series,
			"swinging": result(500, 10, 0.5).Series,
		}
		r.Requests[0].P95MS = steadyP95
		return r
	}
	c := summary.Compare(withSeries(10), withSeries(13), summary.DefaultTolerances)
	steady, swinging := c.Requests[0], c.Requests[1]
	require.Equal(t, "steady", steady.Name)
	require.Less(t, steady.Changes[2].Noise, 0.05, "its own seconds barely move")
	require.Equal(t, summary.Regressed, steady.Changes[2].Verdict, "30% on p95, far past its noise")
	require.Greater(t, swinging.Changes[2].Noise, 0.3, "the other's swing is its own")

	// Without them (two local results), a request takes the whole's noise.
	plain := summary.Compare(result(1000, 10, 0.5, "steady"), result(1000, 13, 0.5, "steady"), summary.DefaultTolerances)
	require.InDelta(t, plain.Total.Changes[2].Noise, plain.Requests[0].Changes[2].Noise, 1e-12)
}
