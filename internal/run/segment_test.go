package run_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/run"
)

func TestSegmentsThatTileTheRunOwnEveryIndexOnce(t *testing.T) {
	t.Parallel()
	tilings := map[string][]run.Segment{
		"one":      {{}},
		"three":    run.Split(3),
		"weighted": {{From: 0, To: 2, Of: 5}, {From: 2, To: 3, Of: 5}, {From: 3, To: 5, Of: 5}},
	}
	for name, segs := range tilings {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, n := range []int64{0, 1, 2, 7, 100, 101} {
				owners := make([]int, n)
				var scaled int64
				for _, s := range segs {
					require.NoError(t, s.Validate())
					for i := range n {
						if s.Owns(i) {
							owners[i]++
						}
					}
					scaled += s.Scale(n)
					// The k-th index a segment owns is Nth(k), in order.
					for k := range s.Scale(n) {
						i := s.Nth(k)
						require.True(t, s.Owns(i), "%s: Nth(%d) = %d is not its own", s, k, i)
						require.Equal(t, k, s.Scale(i), "%s: Nth(%d) = %d is not its %dth", s, k, i, k)
					}
				}
				require.Equal(t, n, scaled, "shares of %d", n)
				for i, o := range owners {
					require.Equal(t, 1, o, "index %d of %d", i, n)
				}
			}
		})
	}
}

func TestSegmentsStripeAShareEvenly(t *testing.T) {
	t.Parallel()
	// 10 VUs on three agents: 4, 3, 3, and the first of a ramp-up go to different agents.
	segs := run.Split(3)
	require.Equal(t, []int64{4, 3, 3}, []int64{segs[0].Scale(10), segs[1].Scale(10), segs[2].Scale(10)})
	require.True(t, segs[0].Owns(0))
	require.True(t, segs[1].Owns(1))
	require.True(t, segs[2].Owns(2))
}

func TestParseSegment(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"whole", "", "0:1/2", "1:2/2", "2:5/7"} {
		s, err := run.ParseSegment(ok)
		require.NoError(t, err, ok)
		back, err := run.ParseSegment(s.String())
		require.NoError(t, err)
		require.Equal(t, s, back)
	}
	for _, bad := range []string{"1/2", "0:1", "1:1/2", "2:1/2", "0:3/2", "-1:1/2", "a:b/c", "0:1/0", "0:1/2/3"} {
		_, err := run.ParseSegment(bad)
		require.Error(t, err, bad)
	}
}

func FuzzParseSegment(f *testing.F) {
	for _, s := range []string{"0:1/2", "whole", "3:9/10", "0:0/0", "9223372036854775807:1/2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := run.ParseSegment(text)
		if err != nil {
			return
		}
		require.NoError(t, s.Validate())
		// A segment that parses owns what it says and round-trips.
		back, err := run.ParseSegment(s.String())
		require.NoError(t, err)
		require.Equal(t, s, back)
		require.LessOrEqual(t, s.Scale(1000), int64(1000))
	})
}
