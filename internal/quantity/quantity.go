// Package quantity is the one grammar of the durations and rates people write to Barrage: in
// scripts (timeout: 500ms, rate: 200/s, p95 < 300ms, rps > 500), on the command line
// (--duration 2m, --rate 200, --stage 30s:to:90/m) and in the server's settings
// (BARRAGE_ACCESS_TOKEN_TTL=15m). It reads them, and writes them back as they are read.
// docs/scripts.md#values describes it for testers.
//
// It imports nothing of Barrage's, so that any package may read and write what its users
// spell: scripts, flags and settings alike.
package quantity

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

var (
	errDuration = errors.New("must be a duration such as 500ms, 2s or 1m30s")
	errNegative = errors.New("must not be negative")
	errRate     = errors.New("must be a rate such as 200/s, 90/m or 3600/h")
	errNumber   = errors.New("must be a number per second, as in 500 or 500/s, or a rate such as 90/m")
)

// ParseDuration reads a duration written with its units, as time.ParseDuration reads it:
// "300ms", "1.5s", "1m30s", "2h" (units ns, us, µs, ms, s, m and h), and "0" alone without one.
// A negative duration is refused: nothing a user writes lasts less than nothing.
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, errDuration
	case d < 0:
		return 0, errNegative
	}
	return d, nil
}

// FormatDuration writes d as ParseDuration reads it, without the zero units time.Duration's
// String leaves at its end: "1h", "1h30m", "1m", "1m30s", "300ms", "0s".
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// seconds is the length in seconds of a rate's unit of time, by the unit's spellings.
var seconds = map[string]float64{
	"s": 1, "1s": 1, "sec": 1,
	"m": 60, "1m": 60, "min": 60,
	"h": 3600, "1h": 3600,
}

// ParseRate reads a rate, a number of events per unit of time, as events per second: "200/s",
// "0.5/s", "90/m", "3600/h" (units s, 1s or sec; m, 1m or min; h or 1h), with spaces allowed
// around the number and the unit. A rate is a finite number, 0 or more; its bounds are its
// reader's.
func ParseRate(s string) (float64, error) {
	num, unit, ok := strings.Cut(strings.TrimSpace(s), "/")
	secs, known := seconds[strings.TrimSpace(unit)]
	if !ok || !known {
		return 0, errRate
	}
	f, err := number(num, errRate)
	if err != nil {
		return 0, err
	}
	return f / secs, nil
}

// ParsePerSecond reads a rate as ParseRate does, or a bare number as that many per second
// ("500" is "500/s"), where the unit goes without saying: the --rate flag, an rps threshold.
func ParsePerSecond(s string) (float64, error) {
	if strings.Contains(s, "/") {
		return ParseRate(s)
	}
	return number(s, errNumber)
}

// number reads a finite number, 0 or more; bad is the error of what is not a number.
func number(s string, bad error) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	switch {
	case err != nil || math.IsNaN(f) || math.IsInf(f, 0):
		return 0, bad
	case f < 0:
		return 0, errNegative
	case f == 0:
		return 0, nil // -0 too
	}
	return f, nil
}

// FormatRate writes r, events per second, as ParseRate reads it: "200/s", "0.5/s".
func FormatRate(r float64) string {
	return strconv.FormatFloat(r, 'f', -1, 64) + "/s"
}
