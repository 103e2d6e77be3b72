package usl

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
)

// sweep is the concurrency of the synthetic sweeps: doublings from 1 to 64.
var sweep = []float64{1, 2, 4, 8, 16, 32, 64}

// synthetic returns the points of a USL with the given parameters at each of ns, each X
// multiplied by noise[i] when noise is given.
func synthetic(t *testing.T, want Fit, ns, noise []float64) []Point {
	t.Helper()
	ps := make([]Point, len(ns))
	for i, n := range ns {
		x := want.X(n)
		if noise != nil {
			x *= noise[i]
		}
		ps[i] = Point{N: n, X: x}
	}
	return ps
}

// requireNear fails unless got is within rel of want, relatively.
func requireNear(t *testing.T, want, got, rel float64, what string) {
	t.Helper()
	require.InDelta(t, want, got, rel*math.Abs(want), "%s: want %v within %v%%, got %v", what, want, rel*100, got)
}

func logFit(t *testing.T, f Fit) {
	t.Helper()
	t.Logf("σ=%.6g κ=%.6g λ=%.6g PeakN=%.6g PeakX=%.6g R2=%.6g", f.Sigma, f.Kappa, f.Lambda, f.PeakN(), f.PeakX(), f.R2)
}

func TestFitPointsRecoversExactUSL(t *testing.T) {
	t.Parallel()

	want := Fit{Lambda: 100, Sigma: 0.05, Kappa: 0.001}
	f, err := FitPoints(synthetic(t, want, sweep, nil))
	require.NoError(t, err)
	logFit(t, f)

	requireNear(t, want.Sigma, f.Sigma, 0.10, "σ")
	requireNear(t, want.Kappa, f.Kappa, 0.10, "κ")
	requireNear(t, want.Lambda, f.Lambda, 0.05, "λ")
	require.Greater(t, f.R2, 0.99)
	requireNear(t, math.Sqrt(0.95/0.001), f.PeakN(), 0.10, "PeakN")
}

// TestFitPointsRecoversShapes fits exact data of USLs from near-linear to near-serial, including
// parameters on and near the edges of the search box.
func TestFitPointsRecoversShapes(t *testing.T) {
	t.Parallel()

	for name, want := range map[string]Fit{
		"crosstalk only":      {Lambda: 40, Kappa: 0.002},
		"light contention":    {Lambda: 1000, Sigma: 0.01, Kappa: 1e-5},
		"heavy contention":    {Lambda: 5, Sigma: 0.9},
		"near serial":         {Lambda: 100, Sigma: 0.98, Kappa: 0.0005},
		"strong crosstalk":    {Lambda: 100, Sigma: 0.3, Kappa: 0.05},
		"crosstalk at bound":  {Lambda: 100, Sigma: 0.2, Kappa: 1},
		"contention at bound": {Lambda: 100, Sigma: 1, Kappa: 0.01},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()

			f, err := FitPoints(synthetic(t, want, sweep, nil))
			require.NoError(t, err)
			logFit(t, f)

			require.Greater(t, f.R2, 1-1e-8)
			requireNear(t, want.Lambda, f.Lambda, 0.01, "λ")
			requireNear(t, want.Sigma, f.Sigma, 0.01, "σ")
			requireNear(t, want.Kappa, f.Kappa, 0.01, "κ")
		})
	}
}

func TestFitPointsToleratesNoise(t *testing.T) {
	t.Parallel()

	want := Fit{Lambda: 100, Sigma: 0.05, Kappa: 0.001}
	for name, noise := range map[string][]float64{
		"alternating": {1.03, 0.97, 1.03, 0.97, 1.03, 0.97, 1.03},
		"paired":      {0.97, 0.97, 1.03, 1.03, 0.97, 0.97, 1.03},
		"mixed":       {1.00, 1.02, 0.98, 1.03, 0.97, 0.97, 1.03},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()

			f, err := FitPoints(synthetic(t, want, sweep, noise))
			require.NoError(t, err)
			logFit(t, f)

			require.Greater(t, f.R2, 0.95)
			requireNear(t, want.PeakN(), f.PeakN(), 0.25, "PeakN")
		})
	}
}

func TestFitPointsLinear(t *testing.T) {
	t.Parallel()

	f, err := FitPoints(synthetic(t, Fit{Lambda: 250}, sweep, nil))
	require.NoError(t, err)
	logFit(t, f)

	require.InDelta(t, 0, f.Sigma, 1e-9)
	require.Zero(t, f.Kappa)
	requireNear(t, 250, f.Lambda, 1e-9, "λ")
	require.InDelta(t, 1, f.R2, 1e-12)
	require.True(t, math.IsInf(f.PeakN(), 1), "PeakN %v", f.PeakN())
	require.True(t, math.IsInf(f.PeakX(), 1), "PeakX %v", f.PeakX())
}

func TestFitPointsContentionOnly(t *testing.T) {
	t.Parallel()

	want := Fit{Lambda: 100, Sigma: 0.1}
	f, err := FitPoints(synthetic(t, want, sweep, nil))
	require.NoError(t, err)
	logFit(t, f)

	requireNear(t, want.Sigma, f.Sigma, 1e-6, "σ")
	require.Zero(t, f.Kappa)
	require.True(t, math.IsInf(f.PeakN(), 1), "PeakN %v", f.PeakN())
	requireNear(t, 1000, f.PeakX(), 1e-6, "PeakX")
}

// workerPool returns the levels of a target that serves 8 requests at a time, each in 10 ms:
// throughput saturates at 800 req/s and latency grows with the queue past 8.
func workerPool(t *testing.T, ns ...float64) []Level {
	t.Helper()
	const workers, serviceMS = 8.0, 10.0
	ls := make([]Level, len(ns))
	for i, n := range ns {
		ls[i] = Level{N: n, X: math.Min(n, workers) / (serviceMS / 1000), P95MS: serviceMS * math.Max(1, n/workers)}
	}
	return ls
}

func TestKneeAtWorkerLimit(t *testing.T) {
	t.Parallel()

	for name, tc := range map[string]struct {
		levels []Level
		want   int
	}{
		"doublings":   {workerPool(t, 2, 4, 8, 16, 32), 2},
		"fine steps":  {workerPool(t, 1, 2, 4, 6, 8, 10, 12, 16), 4},
		"knee at end": {workerPool(t, 1, 2, 4, 8, 9), 3},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()

			knee, ok := Knee(tc.levels)
			require.True(t, ok)
			require.Equal(t, tc.want, knee)
			require.InDelta(t, 8.0, tc.levels[knee].N, 1e-12)
		})
	}
}

// TestFitPointsWorkerLimit fits the USL to a target that saturates abruptly, which the smooth
// law can only approximate, and requires the predicted peak near the real one.
func TestFitPointsWorkerLimit(t *testing.T) {
	t.Parallel()

	for name, ns := range map[string][]float64{
		"doublings":  {2, 4, 8, 16, 32},
		"fine steps": {1, 2, 4, 6, 8, 10, 12, 16},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()

			levels := workerPool(t, ns...)
			ps := make([]Point, len(levels))
			for i, l := range levels {
				ps[i] = Point{N: l.N, X: l.X}
			}
			f, err := FitPoints(ps)
			require.NoError(t, err)
			logFit(t, f)

			require.Greater(t, f.R2, 0.9)
			requireNear(t, 800, f.PeakX(), 0.15, "PeakX")
		})
	}
}

func TestKneeNone(t *testing.T) {
	t.Parallel()

	for name, levels := range map[string][]Level{
		"below the limit": workerPool(t, 1, 2, 4, 8),
		// Throughput flat but latency flat too: a client-side limit, not a saturated target.
		"flat latency": {{N: 1, X: 100, P95MS: 10}, {N: 2, X: 100, P95MS: 10}, {N: 4, X: 100, P95MS: 10}},
		// Latency climbs but throughput still scales well.
		"still scaling": {{N: 1, X: 100, P95MS: 10}, {N: 2, X: 190, P95MS: 15}, {N: 4, X: 360, P95MS: 25}},
		"too few":       workerPool(t, 8, 16),
		"unsorted":      workerPool(t, 2, 8, 4, 16, 32),
		"repeated N":    workerPool(t, 2, 4, 8, 8, 16),
		"zero latency":  {{N: 1, X: 100, P95MS: 10}, {N: 8, X: 100, P95MS: 0}, {N: 16, X: 100, P95MS: 20}},
		"zero X":        {{N: 1, X: 100, P95MS: 10}, {N: 8, X: 0, P95MS: 30}, {N: 16, X: 100, P95MS: 20}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()

			knee, ok := Knee(levels)
			require.False(t, ok, "knee at %d", knee)
		})
	}
}

func TestFitPointsInvalid(t *testing.T) {
	t.Parallel()

	for name, tc := range map[string]struct {
		ps   []Point
		want string
	}{
		"none":        {nil, "at least 3 points, got 0"},
		"two":         {[]Point{{1, 100}, {2, 200}}, "at least 3 points, got 2"},
		"same N":      {[]Point{{4, 100}, {4, 110}, {4, 90}, {4, 105}}, "at least 3 distinct concurrencies, got 1"},
		"two N":       {[]Point{{1, 100}, {2, 200}, {2, 190}, {1, 95}}, "at least 3 distinct concurrencies, got 2"},
		"N below one": {[]Point{{0.5, 50}, {1, 100}, {2, 200}}, "point 0: concurrency 0.5"},
		"N NaN":       {[]Point{{1, 100}, {math.NaN(), 200}, {4, 400}}, "point 1: concurrency NaN"},
		"negative X":  {[]Point{{1, 100}, {2, 200}, {4, -1}}, "point 2: throughput -1"},
		"infinite X":  {[]Point{{1, 100}, {2, math.Inf(1)}, {4, 400}}, "point 1: throughput +Inf"},
		"all X zero":  {[]Point{{1, 0}, {2, 0}, {4, 0}}, "throughput is zero at every point"},
		"empty":       {[]Point{}, "at least 3 points, got 0"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()

			_, err := FitPoints(tc.ps)
			require.ErrorIs(t, err, barrage.ErrInvalid)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestFitPeak(t *testing.T) {
	t.Parallel()

	f := Fit{Lambda: 100, Sigma: 0.05, Kappa: 0.001}
	require.InDelta(t, math.Sqrt(950), f.PeakN(), 1e-9)
	peak := f.PeakX()
	require.InDelta(t, f.X(f.PeakN()), peak, 1e-12)
	require.Less(t, f.X(f.PeakN()-1), peak)
	require.Less(t, f.X(f.PeakN()+1), peak)

	contended := Fit{Lambda: 100, Sigma: 0.1}
	require.True(t, math.IsInf(contended.PeakN(), 1))
	require.InDelta(t, 1000, contended.PeakX(), 1e-9)
	require.Less(t, contended.X(1e6), 1000.0)

	serial := Fit{Lambda: 100, Sigma: 1, Kappa: 0.01}
	require.InDelta(t, 1.0, serial.PeakN(), 1e-12)
	require.InDelta(t, 100, serial.PeakX(), 1e-9)
}

func BenchmarkFit(b *testing.B) {
	want := Fit{Lambda: 100, Sigma: 0.05, Kappa: 0.001}
	ns := []float64{1, 2, 4, 8, 12, 16, 24, 32, 48, 64}
	noise := []float64{1.02, 0.98, 1.01, 0.97, 1.03, 0.99, 1.02, 0.98, 1.01, 0.97}
	ps := make([]Point, len(ns))
	for i, n := range ns {
		ps[i] = Point{N: n, X: want.X(n) * noise[i]}
	}
	for b.Loop() {
		if _, err := FitPoints(ps); err != nil {
			b.Fatal(err)
		}
	}
}
