package summary

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// Tolerances are how much worse a new run may be than its base before it is called regressed:
// latencies and requests/s relative to the base (0.10 is 10%), the error rate in points
// (0.01 is one point).
type Tolerances struct {
	P50       float64 `json:"p50"`
	P95       float64 `json:"p95"`
	P99       float64 `json:"p99"`
	RPS       float64 `json:"rps"`
	ErrorRate float64 `json:"error_rate"`
}

// DefaultTolerances are 10% on p50, p95 and requests/s, 20% on p99 (the tail moves most), one
// point of error rate.
var DefaultTolerances = Tolerances{P50: 0.10, P95: 0.10, P99: 0.20, RPS: 0.10, ErrorRate: 0.01}

// The verdicts of a comparison.
const (
	Improved  = "improved"
	Regressed = "regressed"
	Unchanged = "unchanged"
)

// Change is one figure of a label in both runs.
type Change struct {
	Metric string  `json:"metric"` // rps, p50_ms, p95_ms, p99_ms, error_rate
	Base   float64 `json:"base"`
	New    float64 `json:"new"`
	// Change is relative to the base ((new-base)/base), in points for the error rate.
	Change float64 `json:"change"`
	// Noise is the change the runs' own variation from second to second could make alone, in
	// the same unit: two standard errors of the difference of their means.
	Noise     float64 `json:"noise"`
	Tolerance float64 `json:"tolerance"`
	Verdict   string  `json:"verdict"`
}

// LabelComparison is one request's (or all requests') figures in both runs.
type LabelComparison struct {
	Name    string   `json:"name"`
	Changes []Change `json:"changes"`
	Verdict string   `json:"verdict"`
}

// Comparison is a new run held against its base: all requests together, then each request
// both runs made. A change is a regression when it is worse than its tolerance and than the
// noise; an improvement when it is better by as much.
type Comparison struct {
	Total    LabelComparison   `json:"total"`
	Requests []LabelComparison `json:"requests"`
	// Only lists the requests one run made and the other did not.
	Only    []string `json:"only,omitempty"`
	Verdict string   `json:"verdict"`
}

// Compare holds next against base within tol. The noise of each figure comes from the
// per-second variation of both runs' series: all requests together for the total, and each
// request's own seconds when both results have them (RequestSeries, a run on the server's);
// else a request is given the same relative noise as the whole.
func Compare(base, next *Result, tol Tolerances) Comparison {
	total := noiseOf(base.Series, next.Series)
	c := Comparison{Total: compareLabel("all requests", base.Total, next.Total, total, tol), Requests: []LabelComparison{}}
	verdicts := []string{c.Total.Verdict}
	for _, b := range base.Requests {
		n, ok := findLabel(next.Requests, b.Name)
		if !ok {
			c.Only = append(c.Only, b.Name+" (base only)")
			continue
		}
		noise := total
		bs, inBase := base.RequestSeries[b.Name]
		ns, inNext := next.RequestSeries[b.Name]
		if inBase && inNext {
			noise = noiseOf(bs, ns)
		}
		lc := compareLabel(b.Name, b, n, noise, tol)
		c.Requests = append(c.Requests, lc)
		verdicts = append(verdicts, lc.Verdict)
	}
	for _, n := range next.Requests {
		if _, ok := findLabel(base.Requests, n.Name); !ok {
			c.Only = append(c.Only, n.Name+" (new only)")
		}
	}
	c.Verdict = worst(verdicts)
	return c
}

// noiseOf is the noise of each figure of two series of seconds.
func noiseOf(base, next []Point) map[string]float64 {
	return map[string]float64{
		"rps":    relNoise(base, next, func(p Point) float64 { return p.RPS }),
		"p50_ms": relNoise(base, next, func(p Point) float64 { return p.P50MS }),
		"p95_ms": relNoise(base, next, func(p Point) float64 { return p.P95MS }),
		"p99_ms": relNoise(base, next, func(p Point) float64 { return p.P99MS }),
		"error_rate": absNoise(base, next, func(p Point) float64 {
			if p.Requests == 0 {
				return 0
			}
			return float64(p.Errors) / float64(p.Requests)
		}),
	}
}

func findLabel(ls []Label, name string) (Label, bool) {
	for _, l := range ls {
		if l.Name == name {
			return l, true
		}
	}
	return Label{}, false
}

// compareLabel compares one label's figures.
func compareLabel(name string, b, n Label, noise map[string]float64, tol Tolerances) LabelComparison {
	lc := LabelComparison{Name: name, Changes: []Change{
		relChange("rps", b.RPS, n.RPS, noise["rps"], tol.RPS, false),
		relChange("p50_ms", b.P50MS, n.P50MS, noise["p50_ms"], tol.P50, true),
		relChange("p95_ms", b.P95MS, n.P95MS, noise["p95_ms"], tol.P95, true),
		relChange("p99_ms", b.P99MS, n.P99MS, noise["p99_ms"], tol.P99, true),
	}}
	er := Change{Metric: "error_rate", Base: b.ErrorRate, New: n.ErrorRate, Change: n.ErrorRate - b.ErrorRate,
		Noise: noise["error_rate"], Tolerance: tol.ErrorRate}
	er.Verdict = judge(er.Change, er.Noise, er.Tolerance, true)
	lc.Changes = append(lc.Changes, er)
	verdicts := make([]string, len(lc.Changes))
	for i, ch := range lc.Changes {
		verdicts[i] = ch.Verdict
	}
	lc.Verdict = worst(verdicts)
	return lc
}

// relChange is a figure's relative change; worseUp says whether a rise is worse.
func relChange(metric string, b, n, noise, tol float64, worseUp bool) Change {
	ch := Change{Metric: metric, Base: b, New: n, Noise: noise, Tolerance: tol, Verdict: Unchanged}
	if b <= 0 {
		return ch // nothing to be relative to
	}
	ch.Change = (n - b) / b
	ch.Verdict = judge(ch.Change, noise, tol, worseUp)
	return ch
}

// judge says whether change is worse (or better) than both its tolerance and its noise.
func judge(change, noise, tol float64, worseUp bool) string {
	worse := change
	if !worseUp {
		worse = -change
	}
	switch {
	case worse > tol && worse > noise:
		return Regressed
	case -worse > tol && -worse > noise:
		return Improved
	}
	return Unchanged
}

// worst is regressed if any is, else improved if any is, else unchanged.
func worst(verdicts []string) string {
	out := Unchanged
	for _, v := range verdicts {
		switch v {
		case Regressed:
			return Regressed
		case Improved:
			out = Improved
		}
	}
	return out
}

// relNoise is two standard errors of the relative difference of two runs' means of f over
// their seconds (the first and last left out).
func relNoise(a, b []Point, f func(Point) float64) float64 {
	ma, sa := meanSE(a, f)
	mb, sb := meanSE(b, f)
	if ma <= 0 || mb <= 0 {
		return 0
	}
	return 2 * math.Hypot(sa/ma, sb/mb)
}

// absNoise is two standard errors of the difference of two runs' means of f.
func absNoise(a, b []Point, f func(Point) float64) float64 {
	_, sa := meanSE(a, f)
	_, sb := meanSE(b, f)
	return 2 * math.Hypot(sa, sb)
}

// meanSE is the mean of f over the seconds of ps that had requests, without the first and last
// second, and its standard error.
func meanSE(ps []Point, f func(Point) float64) (mean, se float64) {
	if len(ps) > 2 {
		ps = ps[1 : len(ps)-1]
	}
	var xs []float64
	for _, p := range ps {
		if p.Requests > 0 {
			xs = append(xs, f(p))
		}
	}
	if len(xs) < 2 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	var sq float64
	for _, x := range xs {
		sq += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(sq / float64(len(xs)-1))
	return mean, sd / math.Sqrt(float64(len(xs)))
}

// Print writes c as `barrage compare` prints it: a row per label and figure, then the verdict.
func (c Comparison) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "label\tfigure\tbase\tnew\tchange\tnoise\ttolerance\tverdict")
	for _, lc := range append([]LabelComparison{c.Total}, c.Requests...) {
		for _, ch := range lc.Changes {
			unit, scale := "%", 100.0
			if ch.Metric == "error_rate" {
				unit = " pt"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%+.1f%s\t±%.1f%s\t%.0f%s\t%s\n", lc.Name, ch.Metric, Figure(ch.Metric, ch.Base), Figure(ch.Metric, ch.New),
				ch.Change*scale, unit, ch.Noise*scale, unit, ch.Tolerance*scale, unit, ch.Verdict)
		}
	}
	tw.Flush()
	for _, o := range c.Only {
		fmt.Fprintln(w, "not compared: "+o)
	}
	if why := c.Regressions(); len(why) > 0 {
		fmt.Fprintf(w, "\nverdict: %s (%s)\n", c.Verdict, strings.Join(why, ", "))
		return
	}
	fmt.Fprintf(w, "\nverdict: %s\n", c.Verdict)
}

// Regressions name each figure that regressed: "p95_ms of GET /cart".
func (c Comparison) Regressions() []string {
	var why []string
	for _, lc := range append([]LabelComparison{c.Total}, c.Requests...) {
		for _, ch := range lc.Changes {
			if ch.Verdict == Regressed {
				why = append(why, fmt.Sprintf("%s of %s", ch.Metric, lc.Name))
			}
		}
	}
	return why
}

// Figure is v, a figure of metric (rps, error_rate, p95_ms, ...), in its unit.
func Figure(metric string, v float64) string {
	switch metric {
	case "rps":
		return fmt.Sprintf("%.1f/s", v)
	case "error_rate":
		return fmt.Sprintf("%.2f%%", v*100)
	}
	return MillisText(v)
}
