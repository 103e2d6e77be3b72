package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/pipeline"
	"github.com/barrage-load/barrage/internal/report"
	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/internal/sweep"
)

// levelsFlag is a sweep's concurrencies, "2,4,8,16,32", ascending.
type levelsFlag []int

func (l *levelsFlag) String() string {
	parts := make([]string, len(*l))
	for i, n := range *l {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}

func (l *levelsFlag) Set(s string) error {
	var out []int
	for part := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 {
			return fmt.Errorf("want VUs of at least 1, comma-separated (2,4,8,16), not %q", part)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return fmt.Errorf("levels go up: %d after %d", n, out[len(out)-1])
		}
		out = append(out, n)
	}
	*l = out
	return nil
}

// runSweep runs a script at one concurrency after another and finds the knee.
func runSweep(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "sweep", "[--vus 2,4,8,16,32] [--step 30s] [--csv F] [--report F] [--out F] SCRIPT")
	levels := levelsFlag{2, 4, 8, 16, 32}
	fs.Var(&levels, "vus", "the concurrencies to run at, ascending, comma-separated")
	step := durationFlag(fs, "step", 30*time.Second, "how long each level runs (its first second is not measured)")
	csvPath := fs.String("csv", "", "write the levels as CSV to this file, a row per level")
	reportPath := fs.String("report", "", "write an HTML report with charts of throughput and latency against concurrency")
	out := fs.String("out", "", "write the sweep as JSON to this file")
	insecure := fs.Bool("insecure", false, "skip TLS certificate verification")
	pf := addPluginFlags(fs, e)
	pf.addGrantFlag(fs)
	set, s, err := pf.loadScript(ctx, fs, args, func(*script.Script) (int, error) { return levels[len(levels)-1], nil })
	if err != nil {
		return err
	}
	defer set.Close()
	if err := checkDests(fs, "csv", "report", "out"); err != nil {
		return err
	}
	if *step < time.Second {
		return usageError(fmt.Errorf("--step %s: a level runs for a second at least", *step))
	}
	o := pipeline.SweepOptions{VUs: levels, Step: *step}
	o.Engine.Insecure, o.Engine.Env = *insecure, envLookup(e)
	if set != nil {
		o.Engine.Plugins = set.Plugins
	}
	o.OnLevel = func(l sweep.Level) { sweep.PrintLevel(e.stderr, l) }
	fmt.Fprintf(e.stderr, "sweep of %s: %s VUs, %s each\n", s.Name, levels.String(), *step)
	res, err := pipeline.Sweep(ctx, s, o)
	if err != nil {
		return err
	}
	res.Print(e.stdout)
	if *csvPath != "" {
		if err := writeWith(*csvPath, res.WriteCSV); err != nil {
			return err
		}
	}
	if *reportPath != "" {
		rep := report.SweepReport{Title: "Sweep of " + s.Name, Sweep: res, Version: version, Generated: time.Now()}
		if err := writeWith(*reportPath, rep.Write); err != nil {
			return err
		}
	}
	if *out != "" {
		if err := writeJSON(*out, res); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("the sweep was interrupted after %d of %d levels", res.Complete(), len(levels))
	}
	return nil
}

// runRunsSweep prints one of your ended sweep runs as `barrage sweep` prints its own, and writes
// its CSV and report when asked.
func runRunsSweep(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "runs sweep", "[--csv F] [--report F] ID")
	csvPath := fs.String("csv", "", "write the levels as CSV to this file, a row per level")
	reportPath := fs.String("report", "", "write the sweep's HTML report with charts to this file")
	id, err := idArg(fs, args, "run")
	if err != nil {
		return err
	}
	if err := checkDests(fs, "csv", "report"); err != nil {
		return err
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	sw, err := printSweep(ctx, e, cl, id)
	if err != nil {
		return err
	}
	if *csvPath != "" {
		if err := writeWith(*csvPath, sw.WriteCSV); err != nil {
			return err
		}
	}
	if *reportPath != "" {
		rep := report.SweepReport{Title: fmt.Sprintf("Sweep of %s, run %s", sw.Script, id), Sweep: sw, Version: version, Generated: time.Now()}
		if err := writeWith(*reportPath, rep.Write); err != nil {
			return err
		}
	}
	return nil
}

// printSweep prints the levels, fit and knee of sweep run id as the server judged them, and
// returns them.
func printSweep(ctx context.Context, e env, cl *api.ClientWithResponses, id uuid.UUID) (*sweep.Result, error) {
	res, err := cl.GetRunSweepWithResponse(ctx, id)
	if err != nil {
		return nil, err
	}
	if res.JSON200 == nil {
		return nil, api.ProblemError(res.HTTPResponse, res.Body)
	}
	var sw sweep.Result
	if err := json.Unmarshal(res.Body, &sw); err != nil {
		return nil, fmt.Errorf("the sweep: %w", err)
	}
	// The server's judgement stands as it gave it; printing and the files are told from it.
	sw.Print(e.stdout)
	return &sw, nil
}
