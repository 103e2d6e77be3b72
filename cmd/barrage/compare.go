package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/barrage-load/barrage/internal/summary"
)

// percentFlag is a share given as "10%" (or "10"), kept as 0.10.
type percentFlag struct{ v *float64 }

func (p percentFlag) String() string {
	if p.v == nil {
		return ""
	}
	return strconv.FormatFloat(*p.v*100, 'f', -1, 64) + "%"
}

func (p percentFlag) Set(s string) error {
	f, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
	if err != nil || f < 0 {
		return fmt.Errorf("want a percentage such as 10%%, not %q", s)
	}
	*p.v = f / 100
	return nil
}

// runCompare holds a run's result against a base's: per request and overall, each figure's
// change, the noise the runs' own variation could make, and a verdict; exit 99 on a regression.
func runCompare(_ context.Context, e env, args []string) error {
	fs := newFlags(e, "compare", "[flags] BASE.json NEW.json  (barrage run --out documents)")
	tol := summary.DefaultTolerances
	for _, f := range []struct {
		name string
		v    *float64
		what string
	}{
		{"max-p50-regression", &tol.P50, "how much slower p50 may get"},
		{"max-p95-regression", &tol.P95, "how much slower p95 may get"},
		{"max-p99-regression", &tol.P99, "how much slower p99 may get"},
		{"max-rps-regression", &tol.RPS, "how much lower requests/s may get"},
		{"max-error-increase", &tol.ErrorRate, "how many points the error rate may rise"},
	} {
		fs.Var(percentFlag{f.v}, f.name, f.what+" (a percentage)")
	}
	asJSON := fs.Bool("json", false, "print the comparison as JSON")
	if err := parseFlags(fs, args, 2); err != nil {
		return err
	}
	var runs [2]*summary.Result
	for i, path := range fs.Args() {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		runs[i] = &summary.Result{}
		if err := json.Unmarshal(b, runs[i]); err != nil {
			return usageError(fmt.Errorf("%s is not a result of barrage run --out: %w", path, err))
		}
	}
	c := summary.Compare(runs[0], runs[1], tol)
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(c); err != nil {
			return err
		}
	} else {
		c.Print(e.stdout)
	}
	if c.Verdict == summary.Regressed {
		return &exitError{exitThresholds, fmt.Errorf("%s regressed against %s", fs.Arg(1), fs.Arg(0))}
	}
	return nil
}
