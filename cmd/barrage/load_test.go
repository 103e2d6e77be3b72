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

	for args, want := range map[[3]string]string{
		{"--stage", "30s", ""}:                 "DURATION:RATE",
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
