package quantity_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/quantity"
)

func TestParseDuration(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]time.Duration{
		"0":         0,
		"0s":        0,
		"-0s":       0,
		"+5s":       5 * time.Second,
		"300ms":     300 * time.Millisecond,
		"1.5s":      1500 * time.Millisecond,
		".5s":       500 * time.Millisecond,
		"1m30s":     90 * time.Second,
		"1h30m":     90 * time.Minute,
		"2h":        2 * time.Hour,
		"720h":      720 * time.Hour,
		"250us":     250 * time.Microsecond,
		"250µs":     250 * time.Microsecond, // U+00B5, the micro sign
		"250μs":     250 * time.Microsecond, // U+03BC, the Greek letter
		"10ns":      10,
		"1h1m1s1ms": time.Hour + time.Minute + time.Second + time.Millisecond,
	} {
		got, err := quantity.ParseDuration(s)
		require.NoError(t, err, s)
		require.Equal(t, want, got, s)
	}
}

func TestParseDurationRefuses(t *testing.T) {
	t.Parallel()
	for s, msg := range map[string]string{
		"":         "must be a duration such as 500ms, 2s or 1m30s",
		"10":       "must be a duration", // ten what?
		"1.5":      "must be a duration",
		"soon":     "must be a duration",
		"5 s":      "must be a duration",
		" 5s":      "must be a duration",
		"5S":       "must be a duration",
		"1d":       "must be a duration",
		"3000000h": "must be a duration", // past time.Duration's 290 years
		"-1s":      "must not be negative",
		"-0.5ms":   "must not be negative",
		"1m-30s":   "must be a duration",
	} {
		_, err := quantity.ParseDuration(s)
		require.ErrorContains(t, err, msg, "%q", s)
	}
}

func TestFormatDuration(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		0:                              "0s",
		300 * time.Millisecond:         "300ms",
		1500 * time.Millisecond:        "1.5s",
		time.Minute:                    "1m",
		90 * time.Second:               "1m30s",
		time.Hour:                      "1h",
		90 * time.Minute:               "1h30m",
		time.Hour + time.Second:        "1h0m1s",
		168 * time.Hour:                "168h",
		10*time.Minute + time.Second/2: "10m0.5s",
		250 * time.Microsecond:         "250µs",
	} {
		got := quantity.FormatDuration(d)
		require.Equal(t, want, got, "%v", d)
		back, err := quantity.ParseDuration(got)
		require.NoError(t, err, got)
		require.Equal(t, d, back, "%s reads back", got)
	}
}

// ParsePerSecond reads every rate ParseRate reads, the same.
func TestParseRate(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]float64{
		"0/s":          0,
		"-0/s":         0,
		"200/s":        200,
		"200/1s":       200,
		"200/sec":      200,
		"0.5/s":        0.5,
		".5/s":         0.5,
		"90/m":         1.5,
		"90/1m":        1.5,
		"90/min":       1.5,
		"3600/h":       1,
		"1800/1h":      0.5,
		"6000/m":       100,
		" 200 / s ":    200,
		"1e3/s":        1000,
		"2000000000/s": 2e9,
	} {
		for name, parse := range map[string]func(string) (float64, error){"ParseRate": quantity.ParseRate, "ParsePerSecond": quantity.ParsePerSecond} {
			got, err := parse(s)
			require.NoError(t, err, "%s(%q)", name, s)
			require.InDelta(t, want, got, 1e-12, "%s(%q)", name, s)
			require.False(t, math.Signbit(got), "%s(%q) reads as -0", name, s)
		}
	}
}

// A bare number is per second for ParsePerSecond, and no rate for ParseRate.
func TestParsePerSecondTakesABareNumber(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]float64{"0": 0, "500": 500, "0.25": 0.25, " 500 ": 500, "1e3": 1000} {
		got, err := quantity.ParsePerSecond(s)
		require.NoError(t, err, s)
		require.InDelta(t, want, got, 1e-12, s)
		_, err = quantity.ParseRate(s)
		require.ErrorContains(t, err, "must be a rate such as 200/s", s)
	}
}

func TestRatesRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ s, rate, perSecond string }{ // what ParseRate and ParsePerSecond say
		{"", "must be a rate such as 200/s, 90/m or 3600/h", "must be a number per second, as in 500 or 500/s"},
		{"fast", "must be a rate", "must be a number per second"},
		{"NaN", "must be a rate", "must be a number per second"},
		{"+Inf", "must be a rate", "must be a number per second"},
		{"-1", "must be a rate", "must not be negative"},
		{"200/", "must be a rate", "must be a rate"},
		{"/s", "must be a rate", "must be a rate"},
		{"fast/s", "must be a rate", "must be a rate"},
		{"10/day", "must be a rate", "must be a rate"},
		{"5/fortnight", "must be a rate", "must be a rate"},
		{"10/S", "must be a rate", "must be a rate"},
		{"10/ms", "must be a rate", "must be a rate"},
		{"10/s/s", "must be a rate", "must be a rate"},
		{"NaN/s", "must be a rate", "must be a rate"},
		{"Inf/s", "must be a rate", "must be a rate"},
		{"1e400/s", "must be a rate", "must be a rate"},
		{"-5/s", "must not be negative", "must not be negative"},
		{"-0.5/m", "must not be negative", "must not be negative"},
	} {
		_, err := quantity.ParseRate(c.s)
		require.ErrorContains(t, err, c.rate, "ParseRate(%q)", c.s)
		_, err = quantity.ParsePerSecond(c.s)
		require.ErrorContains(t, err, c.perSecond, "ParsePerSecond(%q)", c.s)
	}
}

func TestFormatRate(t *testing.T) {
	t.Parallel()
	for r, want := range map[float64]string{
		0:       "0/s",
		200:     "200/s",
		0.5:     "0.5/s",
		1.5:     "1.5/s",
		1e7:     "10000000/s",
		1.0 / 3: "0.3333333333333333/s",
	} {
		got := quantity.FormatRate(r)
		require.Equal(t, want, got)
		back, err := quantity.ParseRate(got)
		require.NoError(t, err, got)
		require.Equal(t, math.Float64bits(r), math.Float64bits(back), "%s reads back to the same float", got)
	}
}

// FuzzParseDuration checks that what ParseDuration reads it refuses nothing it writes, and
// that it reads its own writing back to the same duration.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"0", "300ms", "1.5s", "1m30s", "2h", "-1s", "10", "1h0m0.5s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := quantity.ParseDuration(s)
		if err != nil {
			return
		}
		require.GreaterOrEqual(t, d, time.Duration(0))
		back, err := quantity.ParseDuration(quantity.FormatDuration(d))
		require.NoError(t, err)
		require.Equal(t, d, back)
	})
}

// FuzzParsePerSecond checks that a rate read is finite and not negative, and that FormatRate
// writes it so that it reads back the same.
func FuzzParsePerSecond(f *testing.F) {
	for _, s := range []string{"0", "500", "200/s", "90/m", "3600/h", " 1 / sec ", "-1/s", "NaN"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := quantity.ParsePerSecond(s)
		if err != nil {
			return
		}
		require.False(t, math.IsNaN(r) || math.IsInf(r, 0) || r < 0, "%q reads as %v", s, r)
		back, err := quantity.ParseRate(quantity.FormatRate(r))
		require.NoError(t, err)
		require.Equal(t, math.Float64bits(r), math.Float64bits(back), "%v reads back to the same float", r)
	})
}
