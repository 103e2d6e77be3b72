package summary

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/monitor"
)

// seconds are n seconds of a run made by at (i from 0), numbered from 1.
func seconds(n int, at func(i int) Point) []Point {
	ps := make([]Point, n)
	for i := range ps {
		ps[i] = at(i)
		ps[i].Second = int64(i + 1)
	}
	return ps
}

// steady is a second of a target that serves 200 requests/s at 20 ms with 4 VUs, no errors.
func steady(int) Point {
	return Point{Requests: 200, RPS: 200, P50MS: 18, P95MS: 20, P99MS: 25, VUs: 4}
}

func kinds(ins []Insight) []string {
	out := []string{}
	for _, in := range ins {
		out = append(out, in.Kind)
	}
	return out
}

func only(t *testing.T, ins []Insight, kind string) Insight {
	t.Helper()
	require.Equal(t, []string{kind}, kinds(ins))
	return ins[0]
}

func TestASteadyRunHasNoFindings(t *testing.T) {
	r := &Result{Series: seconds(60, steady), Summary: Summary{Requests: []Label{
		{Name: "get cart", Count: 6000, MeanMS: 20}, {Name: "get home", Count: 6000, MeanMS: 15}}}}
	require.Empty(t, Insights(r))
}

func TestALostAgentIsAFinding(t *testing.T) {
	r := &Result{Series: seconds(30, steady), Summary: Summary{
		Incomplete: NewIncomplete([]Gap{NewGap("one (0197…)", "lost", "the agent sent nothing for 8s", 12, 100, 2, 4)})}}
	in := only(t, Insights(r), InsightLostAgent)
	require.Equal(t, int64(12), in.FromS)
	require.Equal(t, "agent one (0197…) lost: its figures stop at second 12", in.Title)
	require.Contains(t, in.Evidence, "up to 204 requests the target served may not be counted")
}

func TestAGeneratorThatSetThePaceIsAFindingAndAFewLateArrivalsAreNot(t *testing.T) {
	limited := &Result{Series: seconds(30, steady), Summary: Summary{Verdict: Verdict{GeneratorLimited: true,
		Reasons: []string{"agent one: the generator's CPU was over 90% for 12 of 30 seconds"}}}}
	in := only(t, Insights(limited), InsightGenerator)
	require.Contains(t, in.Title, "the figures measure the tool")
	require.Equal(t, "agent one: the generator's CPU was over 90% for 12 of 30 seconds", in.Evidence)

	dropped := &Result{Series: seconds(30, steady), Summary: Summary{Verdict: Verdict{Delivery: &Delivery{Model: "open", Scheduled: 6000, Dropped: 40, LatenessMaxMS: 31}}}}
	in = only(t, Insights(dropped), InsightGenerator)
	require.Equal(t, "40 of 6000 arrivals dropped, 0 started more than 10 ms late (the latest by 31.00ms)", in.Evidence)

	onTime := &Result{Series: seconds(30, steady), Summary: Summary{Verdict: Verdict{Delivery: &Delivery{Model: "open", Scheduled: 6000, Late: 30, LatenessMaxMS: 14}}}}
	require.Empty(t, Insights(onTime), "half a percent late is a loaded machine's noise")
}

// rampErrors ramps from 1 VU a second; from second `from` the target fails rate of requests.
func rampErrors(from int, rate float64) func(int) Point {
	return func(i int) Point {
		p := Point{Requests: 100, RPS: 100, P95MS: 20, VUs: int64(i + 1)}
		if i+1 >= from {
			p.Errors = int64(rate * 100)
		}
		return p
	}
}

func TestErrorsThatBeginAtALoadLevelAreAFinding(t *testing.T) {
	in := only(t, Insights(&Result{Series: seconds(40, rampErrors(25, 0.2))}), InsightErrorsFromLoad)
	require.Equal(t, int64(25), in.FromS)
	require.Equal(t, "errors began at second 25, at 25 VUs and 100.0 requests/s, and went on", in.Title)
	require.InDelta(t, 0.2, in.Figures["error_rate_after"], 1e-9)
	require.Zero(t, in.Figures["error_rate_before"])

	// Not: errors from the start (not a level's doing), a low rate all along, a blip.
	require.Empty(t, Insights(&Result{Series: seconds(40, rampErrors(1, 0.2))}))
	require.Empty(t, Insights(&Result{Series: seconds(40, rampErrors(1, 0.004))}))
	blip := seconds(40, rampErrors(100, 0))
	blip[20].Errors, blip[21].Errors = 30, 30
	require.Empty(t, Insights(&Result{Series: blip}))
}

// ramp is a closed-model ramp of a VU every two seconds against a target that serves vus ×
// 100 requests/s at 10 ms up to capacity, and past it queues: the same throughput, longer waits.
func ramp(capacity float64) func(int) Point {
	return func(i int) Point {
		vus := float64(i/2 + 1)
		rps := min(vus*100, capacity)
		return Point{Requests: int64(rps), RPS: rps, P95MS: 10 * vus * 100 / rps, VUs: int64(vus)}
	}
}

func TestAKneeIsAFindingAndALinearTargetHasNone(t *testing.T) {
	in := only(t, Insights(&Result{Series: seconds(40, ramp(800))}), InsightKnee)
	require.InDelta(t, 8, in.Figures["vus"], 1.5, in.Evidence)
	require.Greater(t, in.Figures["next_p95_ms"], in.Figures["p95_ms"])
	require.Contains(t, in.Title, "a knee at about")

	require.Empty(t, Insights(&Result{Series: seconds(40, ramp(math.Inf(1)))}), "a target that scales")
	require.Empty(t, Insights(&Result{Series: seconds(40, steady)}), "one level")
}

// A short ramp, a second a level, whose first level past the target's capacity averages a second
// on each side of it: its latency climbs too little to count, and the next level's shows the knee
// (seen in CI: a ramp to 16 VUs over 16 s against a target of 4 workers at 50 ms had no finding).
func TestAKneeBlurredByALevelAcrossItIsFoundAtTheNextLevel(t *testing.T) {
	type sec struct {
		vus      int64
		rps, p95 float64
	}
	secs := []sec{{1, 0, 0}, {1, 19, 55}, {3, 38, 55.2}, {4, 57, 54.9}, {5, 79, 54.7}, {6, 76, 94.6}, {6, 80, 102.2},
		{8, 76, 105.5}, {9, 79, 106.6}, {9, 77, 137.3}, {11, 80, 144.1}, {11, 77, 155.3}, {12, 79, 159.2}, {14, 78, 191.7},
		{14, 78, 197.4}, {15, 78, 210.6}, {15, 74.1, 205.3}}
	in := only(t, Insights(&Result{Series: seconds(len(secs), func(i int) Point {
		s := secs[i]
		return Point{Requests: int64(s.rps), RPS: s.rps, P50MS: s.p95 * 0.9, P95MS: s.p95, P99MS: s.p95 * 1.1, VUs: s.vus}
	})}), InsightKnee)
	require.InDelta(t, 7, in.Figures["vus"], 2, in.Evidence)
}

// iowait is a monitor whose percent of iowait follows f of the second (from 0).
func iowait(n int, f func(i int) float64) *monitor.Series {
	s := &monitor.Series{Monitor: "db", Series: `node_cpu_seconds_total{mode="iowait"}`, Unit: monitor.UnitPercent}
	for i := range n {
		v := f(i)
		s.Values = append(s.Values, &v)
	}
	return s
}

func TestATargetMetricThatMovesWithLatencyIsAFinding(t *testing.T) {
	// p95 swings between 20 and 60 ms every ten seconds, as the database's iowait does.
	wave := func(i int) float64 { return math.Sin(float64(i) * math.Pi / 10) }
	ps := seconds(60, func(i int) Point {
		p := steady(i)
		p.P95MS = 40 + 20*wave(i)
		return p
	})
	r := &Result{Series: ps, Monitors: []*monitor.Series{
		iowait(60, func(i int) float64 { return 40 + 30*wave(i) }),
		{Monitor: "db", Series: "up", Unit: monitor.UnitValue, Values: iowait(60, func(int) float64 { return 1 }).Values},
		{Monitor: "db", Series: "rss", Unit: monitor.UnitValue, Values: iowait(60, func(i int) float64 { return 1000 + 400*math.Cos(float64(i)*1.7) }).Values},
	}}
	in := only(t, Insights(r), InsightCorrelatedMetric)
	require.Equal(t, `db: node_cpu_seconds_total{mode="iowait"}`, in.Metric)
	require.Greater(t, in.Figures["correlation"], 0.99)
	require.Contains(t, in.Evidence, `node_cpu_seconds_total{mode="iowait"} moved with p95 (correlation 1.00): from 10 to 70% while p95 went from 20.00ms to 60.00ms`)

	// Not: a metric that moves against nothing p95 does, while p95 holds still.
	r.Series = seconds(60, steady)
	require.Empty(t, Insights(r))
}

func TestARequestThatTakesMostOfTheTimeIsAFinding(t *testing.T) {
	r := &Result{Series: seconds(30, steady), Summary: Summary{Requests: []Label{
		{Name: "get home", Count: 3000, MeanMS: 12, P95MS: 20},
		{Name: "post checkout", Count: 3000, MeanMS: 180, P95MS: 410},
		{Name: "get cart", Count: 3000, MeanMS: 15, P95MS: 25},
	}}}
	in := only(t, Insights(r), InsightDominantRequest)
	require.Equal(t, `"post checkout" took 87% of the time waited on the target`, in.Title)

	// Not: one request alone, or requests sharing the time.
	require.Empty(t, Insights(&Result{Summary: Summary{Requests: r.Requests[1:2]}}))
	require.Empty(t, Insights(&Result{Summary: Summary{Requests: []Label{r.Requests[0], r.Requests[2]}}}))
}
