// Package usl fits Neil Gunther's Universal Scalability Law to the levels of a concurrency sweep
// and finds the level past which a target stops scaling.
package usl

import (
	"math"

	"github.com/barrage-load/barrage/internal/barrage"
)

// Point is one level of a sweep: the concurrency N (at least 1) and the throughput X in
// requests per second measured there.
type Point struct {
	N, X float64
}

// Fit is the Universal Scalability Law X(N) = λN / (1 + σ(N−1) + κN(N−1)) fitted to a sweep.
type Fit struct {
	Lambda float64 // throughput of one unit of concurrency (req/s at N=1, ideal)
	Sigma  float64 // contention (serial fraction), in [0, 1]
	Kappa  float64 // coherency (crosstalk), in [0, 1]
	R2     float64 // coefficient of determination of the fit on X
}

// FitPoints fits the USL to ps by least squares on X. It needs at least three points with
// distinct N, every N finite and at least 1, every X finite and not negative, and some X
// above zero; otherwise it returns an error wrapping barrage.ErrInvalid that says which.
//
// For fixed σ and κ the best λ has a closed form, so only σ and κ are searched: a coarse grid
// over [0, 1]² (zero and log-spaced values) picks a start, and Nelder–Mead over σ = sin²u,
// κ = sin²v, restarted until it stops improving, refines it. A σ or κ that can be set to zero
// at a cost of less than 1e-9 in R2 is reported as exactly zero, so that linear data has an
// infinite PeakN. The fit is deterministic.
func FitPoints(ps []Point) (Fit, error) {
	if len(ps) < 3 {
		return Fit{}, barrage.Errorf(barrage.ErrInvalid, "a USL fit needs at least 3 points, got %d", len(ps))
	}
	distinct := make(map[float64]bool, len(ps))
	positive := false
	for i, p := range ps {
		if math.IsNaN(p.N) || math.IsInf(p.N, 0) || p.N < 1 {
			return Fit{}, barrage.Errorf(barrage.ErrInvalid, "point %d: concurrency %v is not a finite number of at least 1", i, p.N)
		}
		if math.IsNaN(p.X) || math.IsInf(p.X, 0) || p.X < 0 {
			return Fit{}, barrage.Errorf(barrage.ErrInvalid, "point %d: throughput %v is not a finite number of at least 0", i, p.X)
		}
		distinct[p.N] = true
		positive = positive || p.X > 0
	}
	if len(distinct) < 3 {
		return Fit{}, barrage.Errorf(barrage.ErrInvalid, "a USL fit needs at least 3 distinct concurrencies, got %d", len(distinct))
	}
	if !positive {
		return Fit{}, barrage.Errorf(barrage.ErrInvalid, "throughput is zero at every point")
	}

	m := model{ps: ps}
	best := m.grid()
	for range maxRestarts {
		next := m.nelderMead(best)
		improved := next.sse < best.sse*(1-1e-12)
		if next.sse < best.sse {
			best = next
		}
		if !improved {
			break
		}
	}
	best = m.snap(best)

	f := Fit{Lambda: m.lambda(best.sigma, best.kappa), Sigma: best.sigma, Kappa: best.kappa}
	f.R2 = m.r2(best.sse)
	return f, nil
}

// X returns the throughput the fit predicts at concurrency n.
func (f Fit) X(n float64) float64 {
	return f.Lambda * n / (1 + f.Sigma*(n-1) + f.Kappa*n*(n-1))
}

// PeakN returns the concurrency N* = sqrt((1−σ)/κ) at which the predicted throughput is highest,
// or +Inf when κ is zero and throughput never falls. It is never below 1: where the formula gives
// less, predicted throughput falls from the first unit of concurrency on.
func (f Fit) PeakN() float64 {
	if f.Kappa == 0 {
		return math.Inf(1)
	}
	return math.Max(1, math.Sqrt((1-f.Sigma)/f.Kappa))
}

// PeakX returns the highest throughput the fit predicts: X at PeakN when κ is above zero, else
// the asymptote λ/σ, or +Inf when σ is zero too.
func (f Fit) PeakX() float64 {
	switch {
	case f.Kappa > 0:
		return f.X(f.PeakN())
	case f.Sigma > 0:
		return f.Lambda / f.Sigma
	default:
		return math.Inf(1)
	}
}

// Level is one level of a sweep with its latency: concurrency N, throughput X in requests per
// second and 95th-percentile latency P95MS in milliseconds.
type Level struct {
	N, X, P95MS float64
}

// Knee returns the index of the level past which throughput stops growing while latency climbs.
//
// With g = N[i+1]/N[i] − 1 the relative growth in concurrency from level i to level i+1, the
// knee is the smallest i for which both
//
//	X[i+1]/X[i] − 1     < 0.25·g   (throughput gains less than a quarter of linear scaling)
//	P95[i+1]/P95[i] − 1 > 0.25·g   (latency grows by more than a quarter of the concurrency)
//
// hold. ok is false when there is no such i within the sweep, when there are fewer than three
// levels, when N is not strictly ascending, or when any N, X or P95MS is not a finite number
// above zero.
func Knee(levels []Level) (knee int, ok bool) {
	return KneeWhere(levels, nil)
}

// KneeWhere is Knee where the two levels of the knee must also pass accept (when not nil): the
// smallest i for which Knee's rule holds and accept(levels[i], levels[i+1]) is true. A caller
// that asks more of a knee (a least growth of latency in milliseconds, say) then finds a later
// one that has it rather than none.
func KneeWhere(levels []Level, accept func(a, b Level) bool) (knee int, ok bool) {
	if len(levels) < 3 {
		return 0, false
	}
	for i, l := range levels {
		if !positiveFinite(l.N) || !positiveFinite(l.X) || !positiveFinite(l.P95MS) {
			return 0, false
		}
		if i > 0 && l.N <= levels[i-1].N {
			return 0, false
		}
	}
	for i := 0; i+1 < len(levels); i++ {
		a, b := levels[i], levels[i+1]
		g := b.N/a.N - 1
		if b.X/a.X-1 < kneeShare*g && b.P95MS/a.P95MS-1 > kneeShare*g && (accept == nil || accept(a, b)) {
			return i, true
		}
	}
	return 0, false
}

// kneeShare is the fraction of the concurrency growth that separates scaling from not scaling
// in Knee's rule.
const kneeShare = 0.25

func positiveFinite(v float64) bool {
	return v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v)
}

// maxRestarts bounds how often Nelder–Mead starts afresh from its own result; a fresh simplex
// gets going again where an old one had shrunk or flattened before reaching the minimum.
const maxRestarts = 6

// candidate is a (σ, κ) pair with the residual sum of squares of its best λ. The search moves in
// (u, v) with σ = sin²u and κ = sin²v: every (u, v) is a valid (σ, κ), so the simplex needs no
// clamping to the box and can approach its edges from inside, and near zero the map is about a
// square root, which narrows the gap between the scales of σ and κ.
type candidate struct {
	u, v         float64
	sigma, kappa float64
	sse          float64
}

// model is the data of one fit and the residual it minimises.
type model struct {
	ps []Point
}

// shape is the USL without λ: N / (1 + σ(N−1) + κN(N−1)).
func shape(n, sigma, kappa float64) float64 {
	return n / (1 + sigma*(n-1) + kappa*n*(n-1))
}

// lambda returns the λ that minimises the squared error for fixed σ and κ: the least-squares
// slope through the origin of X on the shape.
func (m model) lambda(sigma, kappa float64) float64 {
	var xg, gg float64
	for _, p := range m.ps {
		g := shape(p.N, sigma, kappa)
		xg += p.X * g
		gg += g * g
	}
	return xg / gg
}

// eval returns the candidate at σ and κ, both in [0, 1].
func (m model) eval(sigma, kappa float64) candidate {
	return m.candidate(math.Asin(math.Sqrt(sigma)), math.Asin(math.Sqrt(kappa)), sigma, kappa)
}

// at returns the candidate at search coordinates u and v.
func (m model) at(u, v float64) candidate {
	su, sv := math.Sin(u), math.Sin(v)
	return m.candidate(u, v, su*su, sv*sv)
}

func (m model) candidate(u, v, sigma, kappa float64) candidate {
	l := m.lambda(sigma, kappa)
	var sse float64
	for _, p := range m.ps {
		r := p.X - l*shape(p.N, sigma, kappa)
		sse += r * r
	}
	return candidate{u: u, v: v, sigma: sigma, kappa: kappa, sse: sse}
}

// sumSquares returns the sum of X² and the total sum of squares of X about its mean.
func (m model) sumSquares() (ss, sst float64) {
	var mean float64
	for _, p := range m.ps {
		mean += p.X
		ss += p.X * p.X
	}
	mean /= float64(len(m.ps))
	for _, p := range m.ps {
		d := p.X - mean
		sst += d * d
	}
	return ss, sst
}

// r2 returns the coefficient of determination of a fit whose residual sum of squares is sse.
func (m model) r2(sse float64) float64 {
	ss, sst := m.sumSquares()
	if sst <= 1e-20*ss {
		// Throughput constant but for rounding: a perfect fit explains it all, anything else
		// none of it.
		if sse <= 1e-12*ss {
			return 1
		}
		return 0
	}
	return 1 - sse/sst
}

// The grid's axes: zero, then log-spaced values up to 1. κ reaches lower than σ because
// crosstalk that matters at hundreds of users is far smaller than contention that does.
var (
	sigmaGrid = axis(1e-4, 20)
	kappaGrid = axis(1e-7, 28)
)

// axis returns 0 followed by steps+1 values spaced evenly in log from lo to 1.
func axis(lo float64, steps int) []float64 {
	a := make([]float64, 0, steps+2)
	a = append(a, 0)
	for i := 0; i <= steps; i++ {
		a = append(a, math.Pow(lo, 1-float64(i)/float64(steps)))
	}
	return a
}

// grid returns the best candidate on the coarse grid.
func (m model) grid() candidate {
	best := candidate{sse: math.Inf(1)}
	for _, s := range sigmaGrid {
		for _, k := range kappaGrid {
			if c := m.eval(s, k); c.sse < best.sse {
				best = c
			}
		}
	}
	return best
}

// neighbour returns the value next to v on axis a, above it unless v is the last.
func neighbour(v float64, a []float64) float64 {
	for i := 1; i < len(a); i++ {
		if a[i] > v {
			return a[i]
		}
	}
	return a[len(a)-2]
}

// nelderMead minimises the residual over (u, v) from start, with a first simplex about one grid
// cell across.
func (m model) nelderMead(start candidate) candidate {
	const (
		maxIter = 500
		tol     = 1e-11 // simplex extent in u and v at which to stop
	)
	s := [3]candidate{
		start,
		m.at(m.eval(neighbour(start.sigma, sigmaGrid), 0).u, start.v),
		m.at(start.u, m.eval(0, neighbour(start.kappa, kappaGrid)).v),
	}
	for range maxIter {
		// Order best to worst.
		if s[1].sse < s[0].sse {
			s[0], s[1] = s[1], s[0]
		}
		if s[2].sse < s[1].sse {
			s[1], s[2] = s[2], s[1]
		}
		if s[1].sse < s[0].sse {
			s[0], s[1] = s[1], s[0]
		}
		if max(math.Abs(s[1].u-s[0].u), math.Abs(s[2].u-s[0].u)) <= tol &&
			max(math.Abs(s[1].v-s[0].v), math.Abs(s[2].v-s[0].v)) <= tol {
			break
		}
		cu := (s[0].u + s[1].u) / 2
		cv := (s[0].v + s[1].v) / 2
		along := func(t float64) candidate {
			return m.at(cu+t*(cu-s[2].u), cv+t*(cv-s[2].v))
		}
		r := along(1)
		switch {
		case r.sse < s[0].sse:
			if e := along(2); e.sse < r.sse {
				s[2] = e
			} else {
				s[2] = r
			}
			continue
		case r.sse < s[1].sse:
			s[2] = r
			continue
		}
		// Contract towards the better of the reflection and the worst vertex.
		t := -0.5
		if r.sse < s[2].sse {
			t = 0.5
		}
		if c := along(t); c.sse < min(r.sse, s[2].sse) {
			s[2] = c
			continue
		}
		for i := 1; i < 3; i++ {
			s[i] = m.at((s[0].u+s[i].u)/2, (s[0].v+s[i].v)/2)
		}
	}
	best := s[0]
	for _, c := range s[1:] {
		if c.sse < best.sse {
			best = c
		}
	}
	return best
}

// snap sets σ or κ to exactly zero when doing so costs the fit at most snapR2 of R2, so that a
// parameter the data cannot tell from zero is reported as zero.
func (m model) snap(c candidate) candidate {
	_, sst := m.sumSquares()
	limit := c.sse + snapR2*sst
	for _, z := range []candidate{m.eval(0, 0), m.eval(c.sigma, 0), m.eval(0, c.kappa)} {
		if z.sse <= limit {
			return z
		}
	}
	return c
}

// snapR2 is the loss of R2 below which a parameter counts as zero: far below what measurement
// noise in a real sweep explains, far above rounding.
const snapR2 = 1e-9
