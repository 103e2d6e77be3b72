package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/report"
	"github.com/barrage-load/barrage/internal/summary"
)

// localReport is the report on a local run's result, held against base within tol when it is
// given.
func localReport(r, base *summary.Result, baseName string, tol summary.Tolerances) report.Report {
	rep := report.Report{Title: reportTitle(r), Run: r, Version: version, Generated: time.Now()}
	if base != nil {
		c := summary.Compare(base, r, tol)
		rep.Base, rep.BaseTitle, rep.Comparison = base, baseName, &c
	}
	return rep
}

func reportTitle(r *summary.Result) string {
	if r.Script == "" {
		return "Barrage run"
	}
	return filepath.Base(r.Script)
}

// runReport writes a `barrage run --out` result as a self-contained HTML report with charts,
// held against a base result when --base names one.
func runReport(_ context.Context, e env, args []string) error {
	fs := newFlags(e, "report", "[-o report.html] [--base BASE.json] RESULT.json  (a barrage run --out document)")
	out := fs.String("o", "", "the report's file (default: RESULT with .html for .json)")
	basePath := fs.String("base", "", "a base run's result to draw and compare this one against")
	tol := addTolerances(fs)
	path, err := positionalArg(fs, args)
	if err != nil {
		return err
	}
	r, err := readResult(path)
	if err != nil {
		return err
	}
	var base *summary.Result
	if *basePath != "" {
		if base, err = readResult(*basePath); err != nil {
			return err
		}
	}
	rep := localReport(r, base, filepath.Base(*basePath), *tol)
	dest := *out
	if dest == "" {
		dest = strings.TrimSuffix(path, filepath.Ext(path)) + ".html"
	}
	if err := writeWith(dest, rep.Write); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "report written to", dest)
	return nil
}

// runRunsReport saves the server's report on one of your runs.
func runRunsReport(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "runs report", "[-o report.html] [--base BASE_ID [tolerances]] ID | --junit FILE ID")
	out := fs.String("o", "", "the report's file (default: run-ID.html)")
	base := fs.String("base", "", "a run to draw and compare this one against")
	junit := fs.String("junit", "", "write the run's verdicts (thresholds, checks, its baseline's comparison) as JUnit XML to this file, for CI, in place of the HTML report")
	tol := addTolerances(fs)
	id, err := idArg(fs, args, "run")
	if err != nil {
		return err
	}
	if *junit != "" {
		if *out != "" || *base != "" {
			return usageError(errors.New("--junit writes the JUnit file alone: leave out -o and --base"))
		}
		cl, _, err := apiClient(ctx, e, true)
		if err != nil {
			return err
		}
		return writeJUnit(ctx, e, cl, id, *junit)
	}
	p50, p95, p99, rps, errs := percents(*tol)
	params := &api.GetRunReportParams{MaxP50Regression: p50, MaxP95Regression: p95, MaxP99Regression: p99,
		MaxRpsRegression: rps, MaxErrorIncrease: errs}
	if *base != "" {
		baseID, err := uuid.Parse(*base)
		if err != nil {
			return usageError(fmt.Errorf("--base %q: want a run's id: %w", *base, err))
		}
		params.Base = &baseID
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	res, err := cl.GetRunReport(ctx, id, params)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		return api.ProblemError(res, body)
	}
	dest := *out
	if dest == "" {
		dest = "run-" + id.String() + ".html"
	}
	if err := writeWith(dest, func(w io.Writer) error { _, err := io.Copy(w, res.Body); return err }); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "report written to", dest)
	return nil
}
