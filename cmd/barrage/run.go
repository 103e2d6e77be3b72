package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/engine"
	"github.com/barrage-load/barrage/internal/monitor"
	"github.com/barrage-load/barrage/internal/pipeline"
	"github.com/barrage-load/barrage/internal/pluginhost"
	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/internal/summary"
)

// Exit statuses of `barrage run`, distinct so that CI can tell them apart.
const (
	exitThresholds  = 99 // the run completed and a threshold failed (as k6 does)
	exitScriptError = 65 // the script is invalid (EX_DATAERR)
)

// exitError carries a process exit status.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func runRun(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "run", "[flags] SCRIPT")
	lf := addLoadFlags(fs)
	out := fs.String("out", "", "write the full result as JSON to this file")
	csvPath := fs.String("csv", "", "write the per-second series as CSV to this file")
	summaryCSV := fs.String("summary-csv", "", "write the summary as CSV to this file, a row per label")
	reportPath := fs.String("report", "", "write the result as a self-contained HTML report with charts to this file")
	junit := fs.String("junit", "", "write the run's verdicts (its end, thresholds and checks) as JUnit XML to this file, for CI")
	quiet := fs.Bool("quiet", false, "no live line; only the summary")
	insecure := fs.Bool("insecure", false, "skip TLS certificate verification")
	envs := addEnvFlag(fs)
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the generator to this file")
	pf := addPluginFlags(fs, e)
	pf.addGrantFlag(fs)
	var load barrage.LoadOverrides
	set, s, err := pf.loadScript(ctx, fs, args, func(s *script.Script) (int, error) {
		var err error
		if load, err = lf.overrides(); err != nil {
			return 0, err
		}
		if err := run.CheckScenarioOverrides(s, load); err != nil {
			return 0, usageError(err)
		}
		w := run.Workload(s, load)
		if note := lf.chosenVUs(w.MaxVUs); note != "" {
			fmt.Fprintln(e.stderr, note)
		}
		return max(w.VUs, w.MaxVUs), nil
	})
	if err != nil {
		return err
	}
	defer set.Close()
	if err := checkDests(fs, "out", "summary-csv", "report"); err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	opts := engine.LoadOptions(load)
	// A name the script does not read is a mistake (a typo would leave the default in place),
	// as the server says of a run's env.
	for _, name := range slices.Sorted(maps.Keys(*envs)) {
		if !slices.Contains(s.EnvNames(), name) {
			return usageError(fmt.Errorf("-e %s: the script reads no environment variable of this name (variables.env)", name))
		}
	}
	opts.Insecure, opts.Env = *insecure, envs.lookup(envLookup(e))
	if opts.Secrets, err = localSecrets(e, s); err != nil {
		return err
	}
	if set != nil {
		opts.Plugins = set.Plugins
	}
	if set != nil && set.HasURLHooks() {
		if e.getenv("GOGC") == "" {
			// Every call into a URL hook allocates (a protobuf message each way), where a
			// request alone hardly does: collecting less often buys back CPU for the load.
			debug.SetGCPercent(400)
		}
		// The generator and its URL plugins take turns on shared cores, as plugins do.
		if err := pluginhost.SchedBatch(); err != nil {
			fmt.Fprintf(e.stderr, "barrage: scheduling policy unchanged: %v\n", err)
		}
	}
	var (
		series  *summary.SeriesCSV
		csvFile *os.File
	)
	if *csvPath != "" {
		if csvFile, err = os.Create(*csvPath); err != nil {
			return err
		}
		defer csvFile.Close()
		series = summary.NewSeriesCSV(csvFile)
	}
	var points []summary.Point
	workload := run.Workload(s, load)
	steady := summary.NewLiveStability(workload)
	opts.OnSecond = func(sec run.Second) {
		p := summary.NewPoint(sec.Index, sec.Snapshot, sec.Health)
		points = append(points, p)
		// A last second of a few milliseconds would show a rate of thousands: its requests are
		// in the summary.
		if !*quiet && sec.Snapshot.Duration >= 500*time.Millisecond {
			live := summary.NewLive(sec.Snapshot.Requests(), sec.Snapshot.Duration, sec.Elapsed, sec.Health.ActiveVUs, sec.Health.CPU)
			live.Stability = steady.Add(sec.Index, p.RPS)
			fmt.Fprintln(e.stderr, live)
		}
		if series != nil {
			series.Write(sec.Index, sec.Snapshot, sec.Health.CPU, sec.Health.ActiveVUs)
		}
	}
	opts.Judge = true
	l, err := pipeline.Start(ctx, s, pipeline.Options{Engine: opts, Monitors: monitor.Client(nil)})
	if err != nil {
		if errors.Is(err, barrage.ErrInvalid) {
			return &exitError{exitScriptError, err}
		}
		return err
	}
	outcome := l.Wait()
	res := outcome.Result
	doc := summary.NewResult(res)
	doc.Series = append(doc.Series, points...)
	doc.Monitors, doc.MonitorFailures = outcome.Monitors, outcome.Account.MonitorFailures
	doc.SetStability(workload)
	doc.Insights = summary.Insights(doc)
	doc.Print(e.stdout)
	if *out != "" {
		if err := writeJSON(*out, doc); err != nil {
			return err
		}
	}
	if *summaryCSV != "" {
		if err := writeWith(*summaryCSV, doc.Summary.WriteCSV); err != nil {
			return err
		}
	}
	if *reportPath != "" {
		if err := writeWith(*reportPath, localReport(doc, nil, "", summary.DefaultTolerances).Write); err != nil {
			return err
		}
	}
	if *junit != "" {
		verdicts := summary.Document{State: barrage.RunFinished, Reason: "the load ran to its end", ElapsedS: doc.ElapsedS, Summary: doc.Summary}
		if res.Stop.Reason == run.Canceled {
			verdicts.State, verdicts.Reason = barrage.RunCanceled, "the run was interrupted"
		}
		if err := writeWith(*junit, func(w io.Writer) error { return verdicts.JUnit(w, doc.Script) }); err != nil {
			return err
		}
	}
	if series != nil {
		if err := cmp.Or(series.Flush(), csvFile.Close()); err != nil {
			return fmt.Errorf("write %s: %w", *csvPath, err)
		}
	}
	if err := res.ThresholdsErr(); err != nil {
		return &exitError{exitThresholds, err}
	}
	if res.Stop.Reason == run.Canceled {
		return errors.New("the run was interrupted; the summary covers what ran")
	}
	return nil
}

// positionalArg parses flags placed before or after the one positional argument (a script's
// path, a name) and returns that argument.
func positionalArg(fs *flag.FlagSet, args []string) (string, error) {
	var path string
	for len(args) > 0 {
		if err := parseArgs(fs, args); err != nil {
			return "", err
		}
		if fs.NArg() == 0 {
			break
		}
		if path != "" {
			fs.Usage()
			return "", errUsage
		}
		path = fs.Arg(0)
		args = args[len(args)-fs.NArg()+1:]
	}
	if path == "" {
		fs.Usage()
		return "", errUsage
	}
	return path, nil
}

// loadScript reads the script at path, and warns on stderr of what it should change.
func loadScript(e env, path string) (*script.Script, error) {
	s, err := script.Load(path, script.ParseOptions{})
	if err != nil {
		var list script.ErrorList
		if errors.Is(err, fs.ErrNotExist) && !errors.As(err, &list) {
			return nil, err // no script to judge: not an invalid one
		}
		if errors.As(err, &list) {
			return nil, &exitError{exitScriptError, fmt.Errorf("the script is not valid:\n%w", err)}
		}
		return nil, &exitError{exitScriptError, err}
	}
	for _, d := range s.Deprecations {
		fmt.Fprintf(e.stderr, "warning: %v\n", d)
	}
	if s.Name == "" { // the summary, reports and comparisons name a run by its script
		s.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return s, nil
}

func envLookup(e env) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v := e.getenv(k)
		return v, v != ""
	}
}

// localSecrets are the values of the secrets s reads (${secret.NAME}) for a run on this machine:
// each from the environment variable BARRAGE_SECRET_NAME. One that is not set is an error naming
// it. On the server a run reads its owner's secrets instead (barrage secrets set).
func localSecrets(e env, s *script.Script) (map[string]string, error) {
	out := map[string]string{}
	var missing []string
	for _, name := range s.Secrets {
		v := e.getenv("BARRAGE_SECRET_" + name)
		if v == "" {
			missing = append(missing, "BARRAGE_SECRET_"+name)
			continue
		}
		if err := barrage.CheckSecretValue("BARRAGE_SECRET_"+name, v); err != nil {
			return nil, err
		}
		out[name] = v
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("the script reads secrets: set %s (a run on the server reads yours: barrage secrets set NAME)", strings.Join(missing, ", "))
	}
	return out, nil
}

// writeJSON writes v to path as indented JSON.
func writeJSON(path string, v any) error {
	return writeWith(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	})
}

// writeWith writes the file at path with write, whole or not at all: into a temporary file
// beside it, renamed over it once written, so a failure leaves what was there.
func writeWith(path string, write func(io.Writer) error) error {
	return writeWithMode(path, 0o644, write)
}

// writePrivate writes data to path as writeWith does, readable by its owner alone whatever the
// file was before: a recording, or the script made of one, may hold what was typed in (a
// password left as recorded).
func writePrivate(path string, data []byte) error {
	return writeWithMode(path, 0o600, func(w io.Writer) error { _, err := w.Write(data); return err })
}

// writeWithMode is writeWith, the file getting mode.
func writeWithMode(path string, mode os.FileMode, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // gone once renamed
	err = cmp.Or(write(f), f.Chmod(mode), f.Close())
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// checkDests fails early, before a run, when a file one of the flags names could not be
// written at its end: its folder does not exist.
func checkDests(fs *flag.FlagSet, names ...string) error {
	for _, name := range names {
		path := fs.Lookup(name).Value.String()
		if path == "" {
			continue
		}
		if st, err := os.Stat(filepath.Dir(path)); err != nil || !st.IsDir() {
			return usageError(fmt.Errorf("--%s %s: no folder %s to write it in", name, path, filepath.Dir(path)))
		}
	}
	return nil
}
