package summary

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/barrage-load/barrage/internal/monitor"
	"github.com/barrage-load/barrage/internal/usl"
)

// The kinds of finding.
const (
	// InsightLostAgent: an agent's figures stop short; what they lack.
	InsightLostAgent = "lost_agent"
	// InsightGenerator: the generators, not the target, limited the load, or did not deliver it.
	InsightGenerator = "generator"
	// InsightErrorsFromLoad: errors began at a load level and went on.
	InsightErrorsFromLoad = "errors_from_load"
	// InsightKnee: past a concurrency, throughput stopped rising while latency climbed.
	InsightKnee = "knee"
	// InsightCorrelatedMetric: one of the target's own metrics moved with the latency.
	InsightCorrelatedMetric = "correlated_metric"
	// InsightDominantRequest: one request took most of the time the session waited on the target.
	InsightDominantRequest = "dominant_request"
)

// Insight is a finding of a run that says what to look at, with its evidence: the figures from
// the run's own seconds that make it.
type Insight struct {
	Kind string `json:"kind"`
	// Title says what to look at, in a line.
	Title string `json:"title"`
	// Evidence is what the run measured that makes the finding, in a sentence or two.
	Evidence string `json:"evidence"`
	// Figures are the evidence's numbers, by name, for tools.
	Figures map[string]float64 `json:"figures,omitempty"`
	// FromS is the second (from 1) the finding starts at, when it has one.
	FromS int64 `json:"from_s,omitempty"`
	// Metric names the target's metric of a correlated_metric finding.
	Metric string `json:"metric,omitempty"`
}

// What makes a finding; each rule's figures are here so that its tests and docs say the same.
const (
	// insightMinSeconds is the fewest seconds with requests a run needs for findings read from
	// its seconds (a knee, errors from a level, a correlated metric).
	insightMinSeconds = 10
	// errorOnset is the error rate of a second that counts as failing; errorCalm the rate of
	// the seconds before that counts as clean.
	errorOnset, errorCalm = 0.05, 0.01
	// errorPersist is the share of the seconds from the first failing one to the end that must
	// fail too: errors that began and went on, not a blip.
	errorPersist = 0.5
	// CorrelationInsight is the |r| of a target metric and p95 over the run's seconds that makes
	// a finding, when both moved: the metric by MinMetricMove of its mean, p95 by
	// MinLatencyMove of its mean (peak to trough).
	CorrelationInsight            = 0.7
	MinMetricMove, MinLatencyMove = 0.10, 0.25
	// dominantShare is the share of the time waited on the target (count × mean of each
	// request) one request must take to dominate.
	dominantShare = 0.5
	// dominantLead is how many times the next request's time the dominant one's must be.
	dominantLead = 3.0
	// kneeLevels is how many load levels a run's seconds are grouped into for its knee; the
	// knee's p95 must grow by kneeMinMS and by kneeMinGrowth at least.
	kneeLevels    = 8
	kneeMinMS     = 1.0
	kneeMinGrowth = 0.20
	// dominantMin is the fewest responses a dominant request needs: one slow outlier is not it.
	dominantMin = 50
	// lateShare is the share of an open model's arrivals that may start late (more than 10 ms)
	// before the delivery is a finding.
	lateShare = 0.01
)

// Insights are the findings of r, the gravest first: what its figures lack, whether the
// generators held, then what the target did.
func Insights(r *Result) []Insight {
	var out []Insight
	if in := r.Incomplete; in != nil {
		for _, g := range in.Agents {
			out = append(out, Insight{Kind: InsightLostAgent, FromS: g.FromS,
				Title:    fmt.Sprintf("agent %s %s: its figures stop at second %d", g.Agent, g.State, g.FromS),
				Evidence: fmt.Sprintf("%s; up to %d requests the target served may not be counted", g.Reason, g.MissingRequests),
				Figures:  map[string]float64{"missing_requests": float64(g.MissingRequests), "rps": g.RPS}})
		}
	}
	if in, ok := generator(r.Verdict); ok {
		out = append(out, in)
	}
	seconds := steadySeconds(r.Series)
	if in, ok := errorsFromLoad(seconds); ok {
		out = append(out, in)
	}
	if in, ok := knee(seconds); ok {
		out = append(out, in)
	}
	out = append(out, correlatedMetrics(r, seconds)...)
	if in, ok := dominantRequest(r.Requests); ok {
		out = append(out, in)
	}
	return out
}

// generator finds generators that set the pace (the verdict's reasons), or an open model's
// that dropped arrivals or started more than lateShare of them late.
func generator(v Verdict) (Insight, bool) {
	d := v.Delivery
	undelivered := d != nil && (d.Dropped > 0 || float64(d.Late) > lateShare*float64(d.Scheduled))
	if !v.GeneratorLimited && !undelivered {
		return Insight{}, false
	}
	in := Insight{Kind: InsightGenerator, Title: "the generators, not the target, set the pace: the figures measure the tool",
		Evidence: strings.Join(v.Reasons, "; ")}
	if !v.GeneratorLimited {
		in.Title = "the generators did not deliver the arrivals on time"
	}
	if d != nil {
		in.Figures = map[string]float64{"scheduled": float64(d.Scheduled), "late": float64(d.Late), "dropped": float64(d.Dropped), "lateness_max_ms": d.LatenessMaxMS}
		if in.Evidence == "" {
			in.Evidence = fmt.Sprintf("%d of %d arrivals dropped, %d started more than 10 ms late (the latest by %s)", d.Dropped, d.Scheduled, d.Late, MillisText(d.LatenessMaxMS))
		}
	}
	return in, true
}

// steadySeconds are the seconds of ps with requests, without the first and the last (a part of
// a second each).
func steadySeconds(ps []Point) []Point {
	if len(ps) > 2 {
		ps = ps[1 : len(ps)-1]
	}
	var out []Point
	for _, p := range ps {
		if p.Requests > 0 {
			out = append(out, p)
		}
	}
	return out
}

func errorRate(p Point) float64 { return float64(p.Errors) / float64(max(p.Requests, 1)) }

// errorsFromLoad finds errors that began at a load level and went on: a second failing more
// than errorOnset of its requests after at least insightMinSeconds/2 clean ones, and at least
// errorPersist of the seconds from it to the end failing too.
func errorsFromLoad(ps []Point) (Insight, bool) {
	if len(ps) < insightMinSeconds {
		return Insight{}, false
	}
	for i, p := range ps {
		if errorRate(p) <= errorOnset {
			continue
		}
		if i < insightMinSeconds/2 {
			return Insight{}, false // failing from the start: not a level's doing
		}
		var before, after int64
		var beforeReq, afterReq int64
		for _, q := range ps[:i] {
			before, beforeReq = before+q.Errors, beforeReq+q.Requests
		}
		failing := 0
		for _, q := range ps[i:] {
			after, afterReq = after+q.Errors, afterReq+q.Requests
			if errorRate(q) > errorOnset {
				failing++
			}
		}
		calm := float64(before) / float64(max(beforeReq, 1))
		if calm > errorCalm || float64(failing) < errorPersist*float64(len(ps)-i) {
			return Insight{}, false
		}
		rate := float64(after) / float64(max(afterReq, 1))
		return Insight{Kind: InsightErrorsFromLoad, FromS: p.Second,
			Title: fmt.Sprintf("errors began at second %d, at %d VUs and %.1f requests/s, and went on", p.Second, p.VUs, p.RPS),
			Evidence: fmt.Sprintf("%.2f%% of requests failed before second %d, %.2f%% from it to the end (%d of %d seconds failing more than %.0f%%)",
				100*calm, p.Second, 100*rate, failing, len(ps)-i, 100*errorOnset),
			Figures: map[string]float64{"vus": float64(p.VUs), "rps": p.RPS, "error_rate_before": calm, "error_rate_after": rate}}, true
	}
	return Insight{}, false
}

// knee finds, in a run whose concurrency changed, the level past which throughput stopped
// rising while p95 climbed (usl.Knee's rule, the sweep's): its seconds grouped by VUs into at
// most kneeLevels levels of equal count.
func knee(ps []Point) (Insight, bool) {
	if len(ps) < insightMinSeconds {
		return Insight{}, false
	}
	byVUs := slices.Clone(ps)
	slices.SortStableFunc(byVUs, func(a, b Point) int { return int(a.VUs - b.VUs) })
	var levels []usl.Level
	var firsts []int64 // each level's first second
	per := max(len(byVUs)/kneeLevels, 2)
	for i := 0; i < len(byVUs); {
		j := min(i+per, len(byVUs))
		for j < len(byVUs) && byVUs[j].VUs == byVUs[j-1].VUs {
			j++ // a level keeps all the seconds of its VUs
		}
		var n, x, p95 float64
		first := byVUs[i].Second
		for _, p := range byVUs[i:j] {
			n, x, p95 = n+float64(p.VUs), x+p.RPS*(1-errorRate(p)), p95+p.P95MS
			first = min(first, p.Second)
		}
		k := float64(j - i)
		l := usl.Level{N: n / k, X: x / k, P95MS: p95 / k}
		if len(levels) > 0 && l.N <= levels[len(levels)-1].N {
			levels[len(levels)-1] = l // the same concurrency: one level
		} else {
			levels, firsts = append(levels, l), append(firsts, first)
		}
		i = j
	}
	// Not a fast target's tenth of a millisecond, nor a loaded generator's noise: past those, a
	// later level may still show the knee (a level that averages seconds on both sides of it
	// climbs less).
	i, ok := usl.KneeWhere(levels, func(a, b usl.Level) bool {
		return b.P95MS-a.P95MS >= kneeMinMS && b.P95MS >= (1+kneeMinGrowth)*a.P95MS
	})
	if !ok {
		return Insight{}, false
	}
	a, b := levels[i], levels[i+1]
	return Insight{Kind: InsightKnee, FromS: firsts[i+1],
		Title: fmt.Sprintf("a knee at about %.0f VUs: past it throughput stopped rising while latency climbed", a.N),
		Evidence: fmt.Sprintf("from %.0f to %.0f VUs (%+.0f%%), successful requests/s went from %.1f to %.1f (%+.0f%%) and p95 from %s to %s (%+.0f%%)",
			a.N, b.N, 100*(b.N/a.N-1), a.X, b.X, 100*(b.X/a.X-1), MillisText(a.P95MS), MillisText(b.P95MS), 100*(b.P95MS/a.P95MS-1)),
		Figures: map[string]float64{"vus": a.N, "rps": a.X, "p95_ms": a.P95MS, "next_vus": b.N, "next_rps": b.X, "next_p95_ms": b.P95MS}}, true
}

// correlatedMetrics are the target's metrics that moved with p95 over the run's seconds.
func correlatedMetrics(r *Result, ps []Point) []Insight {
	if len(ps) < insightMinSeconds {
		return nil
	}
	var out []Insight
	for _, m := range r.Monitors {
		var xs, ys []float64
		for _, p := range ps {
			if i := p.Second - 1; i >= 0 && i < int64(len(m.Values)) && m.Values[i] != nil {
				xs, ys = append(xs, *m.Values[i]), append(ys, p.P95MS)
			}
		}
		if len(xs) < insightMinSeconds || !moved(xs, MinMetricMove) || !moved(ys, MinLatencyMove) {
			continue
		}
		c := correlation(xs, ys)
		if math.Abs(c) < CorrelationInsight {
			continue
		}
		name := m.Monitor + ": " + m.Series
		way := "with"
		if c < 0 {
			way = "against"
		}
		lo, hi := slices.Min(xs), slices.Max(xs)
		out = append(out, Insight{Kind: InsightCorrelatedMetric, Metric: name,
			Title: fmt.Sprintf("p95 moved with the target's %s", name),
			Evidence: fmt.Sprintf("over %d seconds, %s moved %s p95 (correlation %.2f): from %.4g to %.4g%s while p95 went from %s to %s",
				len(xs), name, way, c, lo, hi, unitSuffix(m.Unit), MillisText(slices.Min(ys)), MillisText(slices.Max(ys))),
			Figures: map[string]float64{"correlation": c, "metric_min": lo, "metric_max": hi}})
	}
	return out
}

// unitSuffix is a metric's unit after its figures.
func unitSuffix(unit string) string {
	switch unit {
	case monitor.UnitPercent:
		return "%"
	case monitor.UnitPerSecond:
		return "/s"
	}
	return ""
}

// moved says whether xs went from trough to peak by at least share of their mean.
func moved(xs []float64, share float64) bool {
	mean := meanOf(xs)
	return mean != 0 && (slices.Max(xs)-slices.Min(xs))/math.Abs(mean) >= share
}

// dominantRequest finds the request that took at least dominantShare of the time the session
// waited on the target, and dominantLead times as much as any other, among two or more.
func dominantRequest(rs []Label) (Insight, bool) {
	if len(rs) < 2 {
		return Insight{}, false
	}
	times := make([]float64, len(rs))
	var total float64
	for i, l := range rs {
		times[i] = float64(l.Count) * l.MeanMS
		total += times[i]
	}
	top := 0
	for i, v := range times {
		if v > times[top] {
			top = i
		}
	}
	var next float64
	for i, v := range times {
		if i != top {
			next = max(next, v)
		}
	}
	l, share := rs[top], times[top]/total
	if total <= 0 || share < dominantShare || times[top] < dominantLead*next || l.Count < dominantMin {
		return Insight{}, false
	}
	return Insight{Kind: InsightDominantRequest,
		Title:    fmt.Sprintf("%q took %.0f%% of the time waited on the target", l.Name, 100*share),
		Evidence: fmt.Sprintf("%d responses averaging %s (p95 %s), of the session's %d requests", l.Count, MillisText(l.MeanMS), MillisText(l.P95MS), len(rs)),
		Figures:  map[string]float64{"share": share, "mean_ms": l.MeanMS, "p95_ms": l.P95MS}}, true
}
