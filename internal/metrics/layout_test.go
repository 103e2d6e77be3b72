package metrics

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Every slot must hold a contiguous run of values that starts where the previous one ended, and
// be narrow enough for 3 significant digits: the properties the rest of the package builds on.
func TestSlotsTileTheRangeAtThreeDigits(t *testing.T) {
	t.Parallel()
	require.Equal(t, int64(0), lowestValue(0))
	for i := range countsLen {
		lo, hi := lowestValue(i), highestValue(i)
		require.LessOrEqual(t, lo, hi, "slot %d", i)
		if i > 0 {
			require.Equal(t, highestValue(i-1)+1, lo, "slot %d", i)
			require.Equal(t, i, index(lo), "slot %d", i)
		}
		require.Equal(t, i, index(hi), "slot %d", i)
		if lo < subBucketCount {
			require.Equal(t, lo, hi, "slot %d: values below 2048 µs are exact", i)
		} else {
			require.Less(t, float64(hi-lo)/float64(lo), 1/1000.0, "slot %d", i)
		}
	}
	require.Equal(t, int64(maxMicros), highestValue(countsLen-1))
	require.Equal(t, countsLen-1, index(maxMicros))
	require.GreaterOrEqual(t, int64(maxMicros), int64(60e6), "at least 60 s")
}

func TestRankShavesFloatingPointNoise(t *testing.T) {
	t.Parallel()
	require.Equal(t, int64(95), rank(0.95, 100))
	require.Equal(t, int64(96), rank(0.951, 100))
	require.Equal(t, int64(1), rank(0, 100))
	require.Equal(t, int64(1), rank(-1, 100))
	require.Equal(t, int64(1), rank(0.001, 100))
	require.Equal(t, int64(100), rank(1, 100))
	require.Equal(t, int64(100), rank(2, 100))
	for n := int64(1); n <= 2000; n += 1 + n/16 {
		for p := int64(0); p <= 1000; p += 7 {
			want := max((p*n+999)/1000, 1)
			require.Equal(t, want, rank(float64(p)/1000, n), "q=%d/1000 n=%d", p, n)
		}
	}
}
