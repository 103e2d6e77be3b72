package script_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/script"
)

func TestParseThreshold(t *testing.T) {
	t.Parallel()
	cases := map[string]script.Threshold{
		"p95<300ms":               {Metric: script.P95, Op: script.Less, Value: 0.3, Latency: 300 * time.Millisecond},
		"p95 < 300ms":             {Metric: script.P95, Op: script.Less, Value: 0.3, Latency: 300 * time.Millisecond},
		"  p99.9 <= 1.5s ":        {Metric: script.P999, Op: script.LessEqual, Value: 1.5, Latency: 1500 * time.Millisecond},
		"avg < 1m":                {Metric: script.Avg, Op: script.Less, Value: 60, Latency: time.Minute},
		"max<2s over 30s":         {Metric: script.Max, Op: script.Less, Value: 2, Latency: 2 * time.Second, Window: 30 * time.Second},
		"error_rate < 1%":         {Metric: script.ErrorRate, Op: script.Less, Value: 0.01},
		"error_rate <= 0.02":      {Metric: script.ErrorRate, Op: script.LessEqual, Value: 0.02},
		"error_rate<0.5% over 1m": {Metric: script.ErrorRate, Op: script.Less, Value: 0.005, Window: time.Minute},
		"rps > 500":               {Metric: script.RPS, Op: script.Greater, Value: 500},
		"rps > 500 over 30s":      {Metric: script.RPS, Op: script.Greater, Value: 500, Window: 30 * time.Second},
		"rps >= 6000/m":           {Metric: script.RPS, Op: script.GreaterEqual, Value: 100},
		"count >= 1000":           {Metric: script.Count, Op: script.GreaterEqual, Value: 1000},
	}
	for src, want := range cases {
		got, err := script.ParseThreshold(src)
		require.NoError(t, err, src)
		got.Source = ""
		require.InDelta(t, want.Value, got.Value, 1e-12, src)
		want.Value = got.Value
		require.Equal(t, want, *got, src)
	}
}

func TestParseThresholdRefuses(t *testing.T) {
	t.Parallel()
	for src, msg := range map[string]string{
		"":                     "must read",
		"p95 300ms":            "must read",
		"p95 = 300ms":          "must read",
		"p95 < 300ms for 30s":  "must read",
		"p42 < 1s":             `unknown metric "p42"`,
		"latency < 1s":         `unknown metric "latency"`,
		"p95 < 300":            "must be a duration",
		"p95 < -1s":            "must not be negative",
		"error_rate < 101%":    "between 0% and 100%",
		"error_rate < 2":       "between 0% and 100%",
		"error_rate < lots":    "must be a percentage",
		"rps > fast":           "must be a number per second",
		"rps > 5/fortnight":    "must be a rate",
		"count > 1.5":          "whole number",
		"rps > 1 over 0.5s":    "at least 1s",
		"rps > 1 over a-while": "must be a duration",
	} {
		_, err := script.ParseThreshold(src)
		require.ErrorContains(t, err, msg, src)
	}
}

func TestThresholdHolds(t *testing.T) {
	t.Parallel()
	p95, err := script.ParseThreshold("p95 < 300ms")
	require.NoError(t, err)
	require.True(t, p95.Holds((299 * time.Millisecond).Seconds()))
	require.False(t, p95.Holds(0.3))
	rps, err := script.ParseThreshold("rps >= 500")
	require.NoError(t, err)
	require.True(t, rps.Holds(500))
	require.False(t, rps.Holds(499.9))
	require.True(t, script.P99.IsLatency())
	require.False(t, script.ErrorRate.IsLatency())
	pct, ok := script.P999.Percentile()
	require.True(t, ok)
	require.InDelta(t, 99.9, pct, 1e-12)
	_, ok = script.RPS.Percentile()
	require.False(t, ok)
}
