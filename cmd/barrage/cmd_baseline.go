package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/summary"
)

// runTestsBaseline sets or clears a test's baseline run.
func runTestsBaseline(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "tests baseline", "TEST --run RUN [--max-p95-regression PCT ...] | TEST --clear")
	runFlag := fs.String("run", "", "the finished run of the test its later runs are compared with")
	clear := fs.Bool("clear", false, "leave the test without a baseline")
	tol := addTolerances(fs)
	id, err := idArg(fs, args, "test")
	if err != nil {
		return err
	}
	if (*runFlag == "") == !*clear {
		return usageError(errors.New("give --run RUN to set the baseline, or --clear to remove it"))
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	var t *api.Test
	if *clear {
		res, err := cl.ClearTestBaselineWithResponse(ctx, id)
		if err != nil {
			return err
		}
		if t = res.JSON200; t == nil {
			return api.ProblemError(res.HTTPResponse, res.Body)
		}
		fmt.Fprintf(e.stdout, "Test %s has no baseline: its runs are compared with none.\n", id)
		return nil
	}
	runID, err := uuid.Parse(*runFlag)
	if err != nil {
		return usageError(fmt.Errorf("--run %q: want a run's id: %w", *runFlag, err))
	}
	body := api.BaselineInput{RunId: runID}
	for _, f := range []string{"max-p50-regression", "max-p95-regression", "max-p99-regression", "max-rps-regression", "max-error-increase"} {
		if flagGiven(fs, f) {
			body.MaxP50Regression, body.MaxP95Regression, body.MaxP99Regression, body.MaxRpsRegression, body.MaxErrorIncrease = percents(*tol)
			break
		}
	}
	res, err := cl.SetTestBaselineWithResponse(ctx, id, body)
	if err != nil {
		return err
	}
	if t = res.JSON200; t == nil {
		return api.ProblemError(res.HTTPResponse, res.Body)
	}
	fmt.Fprintf(e.stdout, "Run %s is the baseline of test %q: its runs that finish from now on are held to it %s.\n",
		t.Baseline.RunId, t.Name, tolerancesText(t.Baseline))
	return nil
}

// tolerancesText is what a baseline's later runs may lose before they are called regressed.
func tolerancesText(b *api.Baseline) string {
	unit := "points"
	if b.MaxErrorIncrease == 1 {
		unit = "point"
	}
	return fmt.Sprintf("(p50 +%g%%, p95 +%g%%, p99 +%g%%, requests/s -%g%%, errors +%g %s)",
		b.MaxP50Regression, b.MaxP95Regression, b.MaxP99Regression, b.MaxRpsRegression, b.MaxErrorIncrease, unit)
}

// runTestsTrend prints a test's figures over its last runs.
func runTestsTrend(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "tests trend", "TEST [--limit N] [--json]")
	limit := fs.Int("limit", 20, "how many of the newest ended runs (at most 200)")
	asJSON := fs.Bool("json", false, "print the trend as JSON, each request's figures too")
	id, err := idArg(fs, args, "test")
	if err != nil {
		return err
	}
	if *limit < 1 || *limit > 200 {
		return usageError(fmt.Errorf("--limit %d: from 1 to 200", *limit))
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	res, err := cl.GetTestTrendWithResponse(ctx, id, &api.GetTestTrendParams{Limit: limit})
	if err != nil {
		return err
	}
	if res.JSON200 == nil {
		return api.ProblemError(res.HTTPResponse, res.Body)
	}
	if *asJSON {
		_, err := e.stdout.Write(res.Body)
		return err
	}
	var tr summary.Trend
	if err := json.Unmarshal(res.Body, &tr); err != nil {
		return fmt.Errorf("the trend: %w", err)
	}
	if len(tr.Runs) == 0 {
		fmt.Fprintln(e.stdout, "The test has no ended run yet.")
		return nil
	}
	tr.Print(e.stdout)
	return nil
}
