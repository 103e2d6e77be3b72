package metrics_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/metrics"
)

// quantiles are the points compared between histograms and against exact figures, as parts per
// ten thousand so that exact ranks can be computed in integers.
var quantiles = []int64{0, 1, 10, 100, 1000, 2500, 5000, 7500, 9000, 9500, 9900, 9990, 9999, 10000}

// wideSample is a latency spread evenly over the orders of magnitude from 100 ns to 2 hours, so
// it hits sub-microsecond values, every bucket, and the clamp above MaxLatency.
func wideSample(rng *rand.Rand) time.Duration {
	lo, hi := math.Log(100), math.Log(float64(2*time.Hour))
	return time.Duration(math.Exp(lo + rng.Float64()*(hi-lo)))
}

func marshal(t testing.TB, h interface{ MarshalBinary() ([]byte, error) }) []byte {
	t.Helper()
	b, err := h.MarshalBinary()
	require.NoError(t, err)
	return b
}

// The merge of per-second histograms must be the histogram of all the samples, bucket for
// bucket: that is what lets the server merge seconds and agents and still read true percentiles.
func TestMergeOfSecondsEqualsOneHistogramOfAllSamples(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	whole := metrics.NewHistogram()
	seconds := make([]*metrics.Histogram, 60)
	for i := range seconds {
		seconds[i] = metrics.NewHistogram()
	}
	for range 100_000 {
		d := wideSample(rng)
		switch rng.IntN(100) {
		case 0:
			d = 0
		case 1:
			d = -time.Millisecond
		case 2:
			d = 999 * time.Nanosecond
		}
		whole.Record(d)
		seconds[rng.IntN(len(seconds))].Record(d)
	}
	require.Positive(t, whole.Clamped(), "the samples must reach past MaxLatency")

	merged := metrics.NewHistogram()
	for _, s := range seconds {
		merged.Merge(s)
	}
	require.Equal(t, marshal(t, whole), marshal(t, merged))
	require.Equal(t, whole.Count(), merged.Count())
	require.Equal(t, whole.Min(), merged.Min())
	require.Equal(t, whole.Max(), merged.Max())
	require.Equal(t, whole.Mean(), merged.Mean())
	require.Equal(t, whole.Clamped(), merged.Clamped())
	for q := range 101 {
		require.Equal(t, whole.Quantile(float64(q)/100), merged.Quantile(float64(q)/100), "q=%d%%", q)
	}
	for _, p := range quantiles {
		require.Equal(t, whole.Quantile(float64(p)/1e4), merged.Quantile(float64(p)/1e4), "q=%d/1e4", p)
	}

	// Merging in another order, or merging merges (as the server does across agents), changes
	// nothing either.
	halves := [2]*metrics.Histogram{metrics.NewHistogram(), metrics.NewHistogram()}
	for i, s := range slices.Backward(seconds) {
		halves[i%2].Merge(s)
	}
	halves[1].Merge(halves[0])
	require.Equal(t, marshal(t, whole), marshal(t, halves[1]))
}

// Quantiles must be within 0.1% of the exact quantile of the samples (3 significant digits),
// and never below it: HdrHistogram reports the top of the bucket holding the sample. The exact
// figures are taken from the samples in whole microseconds, the histogram's unit.
func TestQuantilesWithinAThousandthOfExact(t *testing.T) {
	t.Parallel()
	distributions := map[string]func(*rand.Rand) time.Duration{
		"uniform 1-50ms": func(r *rand.Rand) time.Duration {
			return time.Millisecond + time.Duration(r.Int64N(int64(49*time.Millisecond)))
		},
		"exponential mean 20ms": func(r *rand.Rand) time.Duration {
			return time.Duration(r.ExpFloat64() * float64(20*time.Millisecond))
		},
		"lognormal median 80ms": func(r *rand.Rand) time.Duration {
			return time.Duration(math.Exp(r.NormFloat64()*0.8) * float64(80*time.Millisecond))
		},
		"bimodal cache 300µs and origin 1.2s": func(r *rand.Rand) time.Duration {
			if r.IntN(10) < 8 {
				return time.Duration(300e3 + r.NormFloat64()*30e3)
			}
			return time.Duration(1.2e9 + r.NormFloat64()*0.2e9)
		},
		"pareto tail from 5ms": func(r *rand.Rand) time.Duration {
			return time.Duration(float64(5*time.Millisecond) / math.Pow(1-r.Float64(), 1/1.2))
		},
		"wide 100ns-2h": wideSample,
	}
	for name, sample := range distributions {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(3, uint64(len(name))))
			h := metrics.NewHistogram()
			const n = 100_000
			exact := make([]int64, n) // µs, as the histogram keeps them
			var sum int64
			for i := range exact {
				d := sample(rng)
				h.Record(d)
				exact[i] = min(max(int64(d/time.Microsecond), 1), int64(metrics.MaxLatency/time.Microsecond))
				sum += exact[i]
			}
			slices.Sort(exact)
			require.Equal(t, int64(n), h.Count())
			require.Equal(t, time.Duration(exact[0])*time.Microsecond, h.Min())
			require.Equal(t, time.Duration(exact[n-1])*time.Microsecond, h.Max())
			require.InDelta(t, float64(sum)/n*1e3, float64(h.Mean()), 1)
			for _, p := range quantiles {
				k := max((p*n+9999)/10000, 1)
				want := exact[k-1]
				got := int64(h.Quantile(float64(p) / 1e4))
				require.GreaterOrEqual(t, got, want*1e3, "q=%d/1e4", p)
				require.LessOrEqual(t, float64(got-want*1e3)/float64(want*1e3), 0.001, "q=%d/1e4: got %v want %v", p,
					time.Duration(got), time.Duration(want)*time.Microsecond)
			}
		})
	}
}

func TestRecordEdgeValues(t *testing.T) {
	t.Parallel()
	var h metrics.Histogram // the zero value is ready
	require.Zero(t, h.Count())
	require.Zero(t, h.Min())
	require.Zero(t, h.Max())
	require.Zero(t, h.Mean())
	require.Zero(t, h.Quantile(0.5))

	h.Record(0)
	h.Record(-time.Second)
	h.Record(999 * time.Nanosecond)
	require.Equal(t, int64(3), h.Count())
	require.Equal(t, time.Microsecond, h.Min())
	require.Equal(t, time.Microsecond, h.Max())
	require.Equal(t, time.Microsecond, h.Quantile(1))

	h.Record(1999 * time.Nanosecond) // truncated to whole microseconds
	require.Equal(t, time.Microsecond, h.Max())

	h.Record(3 * time.Hour)
	h.RecordN(metrics.MaxLatency+time.Microsecond, 2)
	require.Equal(t, int64(3), h.Clamped())
	require.Equal(t, metrics.MaxLatency, h.Max())
	require.Equal(t, metrics.MaxLatency, h.Quantile(1))
	require.Equal(t, int64(7), h.Count())

	h.RecordN(time.Second, 0)
	h.RecordN(time.Second, -5)
	require.Equal(t, int64(7), h.Count())

	h.RecordN(5*time.Millisecond, 1000)
	require.Equal(t, int64(1007), h.Count())
	// The top of the 5 ms slot, 4 µs wide at this magnitude.
	require.Equal(t, 5003*time.Microsecond, h.Quantile(0.5))

	h.Reset()
	require.Zero(t, h.Count())
	require.Zero(t, h.Clamped())
	require.Zero(t, h.Max())
	require.Equal(t, []byte{'H', 1, 0}, marshal(t, &h))
	h.Record(7 * time.Millisecond)
	require.Equal(t, 7*time.Millisecond, h.Min())
	require.Equal(t, 7*time.Millisecond, h.Max())
}

func TestCloneIsIndependent(t *testing.T) {
	t.Parallel()
	h := metrics.NewHistogram()
	h.Record(time.Millisecond)
	c := h.Clone()
	h.Record(time.Second)
	require.Equal(t, int64(1), c.Count())
	require.Equal(t, time.Millisecond, c.Max())
}

// A histogram is kept per label per second, so what it costs in memory matters. Pages are only
// allocated where samples fall.
func TestHistogramMemory(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	fill := func(lo, hi time.Duration, n int) *metrics.Histogram {
		h := metrics.NewHistogram()
		for range n {
			h.Record(lo + time.Duration(rng.Int64N(int64(hi-lo))))
		}
		return h
	}
	empty := metrics.NewHistogram()
	narrow := fill(20*time.Millisecond, 25*time.Millisecond, 10_000)
	typical := fill(time.Millisecond, 50*time.Millisecond, 10_000)
	full := metrics.NewHistogram()
	for v := time.Microsecond; v <= metrics.MaxLatency; v += v / 512 {
		full.Record(v)
	}
	t.Logf("bytes per histogram: empty %d, 20-25ms %d, 1-50ms %d, every bucket %d",
		empty.MemoryBytes(), narrow.MemoryBytes(), typical.MemoryBytes(), full.MemoryBytes())
	require.Less(t, empty.MemoryBytes(), 1024)
	require.Less(t, narrow.MemoryBytes(), 8*1024)
	require.Less(t, typical.MemoryBytes(), 64*1024)
	require.Less(t, full.MemoryBytes(), 200*1024)
}
