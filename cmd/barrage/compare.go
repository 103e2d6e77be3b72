package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/api"
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

// addTolerances adds the flags of a comparison's tolerances, the defaults set.
func addTolerances(fs *flag.FlagSet) *summary.Tolerances {
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
	return &tol
}

// percents are tol as the API's query takes them, in percent.
func percents(tol summary.Tolerances) (p50, p95, p99, rps, errs *float64) {
	pct := func(v float64) *float64 { v *= 100; return &v }
	return pct(tol.P50), pct(tol.P95), pct(tol.P99), pct(tol.RPS), pct(tol.ErrorRate)
}

// printComparison prints c (as JSON when asked), and says, as exit status 99, that what was
// compared regressed.
func printComparison(e env, c summary.Comparison, asJSON bool, what string) error {
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(c); err != nil {
			return err
		}
	} else {
		c.Print(e.stdout)
	}
	if c.Verdict == summary.Regressed {
		return &exitError{exitThresholds, errors.New(what + " regressed")}
	}
	return nil
}

// runCompare holds a run's result against a base's: per request and overall, each figure's
// change, the noise the runs' own variation could make, and a verdict; exit 99 on a regression.
func runCompare(_ context.Context, e env, args []string) error {
	fs := newFlags(e, "compare", "[flags] BASE.json NEW.json  (barrage run --out documents)")
	tol := addTolerances(fs)
	asJSON := fs.Bool("json", false, "print the comparison as JSON")
	if err := parseFlags(fs, args, 2); err != nil {
		return err
	}
	var runs [2]*summary.Result
	for i, path := range fs.Args() {
		var err error
		if runs[i], err = readResult(path); err != nil {
			return err
		}
	}
	return printComparison(e, summary.Compare(runs[0], runs[1], *tol), *asJSON, fmt.Sprintf("%s against %s", fs.Arg(1), fs.Arg(0)))
}

// readResult reads a `barrage run --out` document.
func readResult(path string) (*summary.Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := &summary.Result{}
	if err := json.Unmarshal(b, r); err != nil {
		return nil, usageError(fmt.Errorf("%s is not a result of barrage run --out: %w", path, err))
	}
	if r.Start.IsZero() || r.Model == "" || r.Series == nil {
		return nil, usageError(fmt.Errorf("%s is not a result of barrage run --out: it has no start, model or series", path))
	}
	return r, nil
}

// runRunsCompare holds one of your runs on agents against another, through the server.
func runRunsCompare(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "runs compare", "--base BASE_ID [flags] ID")
	base := fs.String("base", "", "the run to hold this one against")
	tol := addTolerances(fs)
	asJSON := fs.Bool("json", false, "print the comparison as JSON")
	id, err := idArg(fs, args, "run")
	if err != nil {
		return err
	}
	baseID, err := uuid.Parse(*base)
	if err != nil {
		return usageError(fmt.Errorf("--base %q: want a run's id: %w", *base, err))
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	p50, p95, p99, rps, errs := percents(*tol)
	res, err := cl.CompareRunsWithResponse(ctx, id, &api.CompareRunsParams{Base: baseID, MaxP50Regression: p50,
		MaxP95Regression: p95, MaxP99Regression: p99, MaxRpsRegression: rps, MaxErrorIncrease: errs})
	if err != nil {
		return err
	}
	if res.JSON200 == nil {
		return api.ProblemError(res.HTTPResponse, res.Body)
	}
	var c summary.Comparison
	if err := json.Unmarshal(res.Body, &c); err != nil {
		return fmt.Errorf("the comparison: %w", err)
	}
	return printComparison(e, c, *asJSON, fmt.Sprintf("run %s against run %s", id, baseID))
}
