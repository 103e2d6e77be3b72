package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
)

func TestLoadFlagsReadStages(t *testing.T) {
	t.Parallel()
	parse := func(args ...string) (barrage.LoadOverrides, error) {
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		lf := addLoadFlags(fs)
		if err := fs.Parse(args); err != nil {
			return barrage.LoadOverrides{}, err
		}
		return lf.overrides()
	}
	o, err := parse("--stage", "30s:to:200", "--stage", "2m:200/s", "--stage", "30s:to:0", "--vus", "300")
	require.NoError(t, err)
	require.Equal(t, barrage.LoadOverrides{VUs: 300, Stages: []barrage.Stage{
		{To: 200, Ramp: true, Duration: 30 * time.Second}, {To: 200, Duration: 2 * time.Minute}, {To: 0, Ramp: true, Duration: 30 * time.Second},
	}}, o)

	// --rate and a stage's rate read a bare number per second, or a rate as scripts write it.
	o, err = parse("--stage", "1m30s:to:90/m", "--stage", "30s:0.5/s", "--stage", "1m:to:0/s")
	require.NoError(t, err)
	require.Equal(t, []barrage.Stage{
		{To: 1.5, Ramp: true, Duration: 90 * time.Second}, {To: 0.5, Duration: 30 * time.Second}, {To: 0, Ramp: true, Duration: time.Minute},
	}, o.Stages)
	for _, rate := range []string{"200", "200/s", "12000/m", " 200 / sec "} {
		o, err = parse("--rate", rate, "--duration", "2m")
		require.NoError(t, err, rate)
		require.Equal(t, barrage.LoadOverrides{Rate: 200, Duration: 2 * time.Minute}, o, rate)
	}

	for args, want := range map[[3]string]string{
		{"--stage", "30s", ""}:                 "DURATION:RATE",
		{"--stage", "-30s:200", ""}:            "duration \"-30s\": must not be negative",
		{"--stage", "30s:-5", ""}:              "rate \"-5\": must not be negative",
		{"--stage", "30s:5/fortnight", ""}:     "must be a rate such as 200/s",
		{"--rate", "fast", ""}:                 "must be a number per second",
		{"--rate", "NaN", ""}:                  "must be a number per second",
		{"--duration", "10", ""}:               "must be a duration such as 500ms",
		{"--stage", "soon:200", ""}:            "duration \"soon\"",
		{"--stage", "30s:to:fast", ""}:         "rate \"fast\"",
		{"--stage", "30s:200", "--rate=5"}:     "invalid stages: go without rate",
		{"--stage", "500ms:200", ""}:           "invalid stages[0].duration: must be at least 1s",
		{"--stage", "30s:0", ""}:               "at least one stage must have a rate above 0",
		{"--stage", "30s:200", "--vus=-1"}:     "must be above 0",
		{"--stage", "1s:200", "--duration=1m"}: "go without duration",
	} {
		a := []string{args[0], args[1]}
		if args[2] != "" {
			a = append(a, args[2])
		}
		_, err := parse(a...)
		require.ErrorContains(t, err, want, "%v", args)
	}
}

// Wrong usage exits 2, as the README says, whether a flag does not parse, a load does not hold
// together, an id is not one, or a run on agents asks for a fraction of a second; it says what
// was wrong, and nothing reaches a server.
func TestWrongUsageExits2(t *testing.T) {
	t.Parallel()
	id := "0193a000-0000-7000-8000-000000000000"
	for _, args := range [][]string{
		{"run", "--vus", "many", "script.yaml"},
		{"run", "--stage", "30s:0", "../../examples/scripts/smoke.yaml"},
		{"runs", "start", "--script", id, "--stage", "1500ms:10"},
		{"runs", "start", "--script", id, "--duration", "2.5s"},
		{"runs", "show", "not-an-id"},
		{"runs", "start", "--script", id, "--vus", "0"},
		{"runs", "start", "--script", id, "--duration", "0s"},
		{"runs", "start", "--script", id, "--agents", "0"},
		{"run", "--rate", "0", "../../examples/scripts/smoke.yaml"},
		{"runs", "start", "--script", id, "--no-such-flag"},
	} {
		var stderr strings.Builder
		getenv := func(k string) string {
			if k == "BARRAGE_SERVER" {
				return "http://127.0.0.1:1" // nothing listens: reaching it would be another error
			}
			return ""
		}
		err := execute(context.Background(), args, getenv, strings.NewReader(""), io.Discard, &stderr)
		require.Error(t, err, "%v", args)
		require.Equal(t, 2, exitCode(err), "%v: %v\n%s", args, err, stderr.String())
		if !errors.Is(err, errUsage) {
			require.NotEmpty(t, err.Error())
		}
	}
}

// The duration flags (--step, --max-duration, --idle, --max-think) read durations as scripts
// and --duration do.
func TestDurationFlagsReadAsScriptsDo(t *testing.T) {
	t.Parallel()
	parse := func(args ...string) (time.Duration, error) {
		fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		step := durationFlag(fs, "step", 30*time.Second, "how long each level runs")
		require.Equal(t, "30s", fs.Lookup("step").DefValue)
		err := fs.Parse(args)
		return *step, err
	}
	for args, want := range map[string]time.Duration{"": 30 * time.Second, "1m30s": 90 * time.Second, "0": 0, "1.5h": 90 * time.Minute} {
		a := []string{}
		if args != "" {
			a = []string{"--step", args}
		}
		got, err := parse(a...)
		require.NoError(t, err, args)
		require.Equal(t, want, got, args)
	}
	for args, msg := range map[string]string{"-1s": "must not be negative", "90": "must be a duration such as 500ms", "soon": "must be a duration"} {
		_, err := parse("--step", args)
		require.ErrorContains(t, err, msg, args)
	}
}
