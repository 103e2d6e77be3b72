package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/engine"
	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/pluginhost"
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
	vus := fs.Int("vus", 0, "virtual users (closed model), or max VUs with --rate; overrides the script")
	duration := fs.Duration("duration", 0, "run duration; overrides the script")
	rate := fs.Float64("rate", 0, "arrival rate in iterations per second: runs the open model")
	out := fs.String("out", "", "write the full result as JSON to this file")
	csvPath := fs.String("csv", "", "write the per-second series as CSV to this file")
	quiet := fs.Bool("quiet", false, "no live line; only the summary")
	insecure := fs.Bool("insecure", false, "skip TLS certificate verification")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the generator to this file")
	pf := addPluginFlags(fs, e)
	pf.addGrantFlag(fs)
	set, s, err := pf.loadScript(ctx, fs, args, func(s *script.Script) int { return max(*vus, s.Load.VUs, s.Load.MaxVUs) })
	if err != nil {
		return err
	}
	defer set.Close()
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
	opts := engine.Options{VUs: *vus, Duration: *duration, Rate: *rate, Insecure: *insecure, Env: envLookup(e)}
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
	var series *seriesWriter
	if *csvPath != "" {
		if series, err = newSeriesWriter(*csvPath); err != nil {
			return err
		}
		defer series.close()
	}
	opts.OnSecond = func(sec engine.Second) {
		if !*quiet {
			fmt.Fprintln(e.stderr, liveLine(sec))
		}
		if series != nil {
			series.write(sec)
		}
	}
	res, runErr := engine.Run(ctx, s, opts)
	if res == nil {
		if errors.Is(runErr, barrage.ErrInvalid) {
			return &exitError{exitScriptError, runErr}
		}
		return runErr
	}
	printSummary(e.stdout, res)
	if *out != "" {
		if err := writeResultJSON(*out, res); err != nil {
			return err
		}
	}
	if series != nil {
		if err := series.close(); err != nil {
			return fmt.Errorf("write %s: %w", *csvPath, err)
		}
	}
	if errors.Is(runErr, engine.ErrThresholds) {
		return &exitError{exitThresholds, runErr}
	}
	if runErr == nil && res.Stop.Reason == engine.Canceled {
		return errors.New("the run was interrupted; the summary covers what ran")
	}
	return runErr
}

// positionalArg parses flags placed before or after the one positional argument (a script's
// path, a name) and returns that argument.
func positionalArg(fs *flag.FlagSet, args []string) (string, error) {
	var path string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
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

func loadScript(path string) (*script.Script, error) {
	s, err := script.Load(path, script.ParseOptions{})
	if err != nil {
		var list script.ErrorList
		if errors.As(err, &list) {
			return nil, &exitError{exitScriptError, fmt.Errorf("the script is not valid:\n%w", err)}
		}
		return nil, &exitError{exitScriptError, err}
	}
	return s, nil
}

func envLookup(e env) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v := e.getenv(k)
		return v, v != ""
	}
}

// requestStats merges the requests' stats of a snapshot.
func requestStats(snap *metrics.Snapshot, labels []string) *metrics.Stats {
	st := metrics.NewStats()
	for _, l := range labels {
		if s, ok := snap.Labels[l]; ok {
			st.Merge(s)
		}
	}
	return st
}

func liveLine(sec engine.Second) string {
	var labels []string
	for l := range sec.Snapshot.Labels {
		if !strings.HasPrefix(l, engine.GroupPrefix) && !strings.HasPrefix(l, engine.HookPrefix) {
			labels = append(labels, l)
		}
	}
	st := requestStats(sec.Snapshot, labels)
	return formatLive(sec.Elapsed, sec.Health.ActiveVUs, float64(st.Requests),
		st.Latency.Quantile(0.5), st.Latency.Quantile(0.95), st.Latency.Quantile(0.99), pct(st.Failed(), st.Requests), sec.Health.CPU)
}

// formatLive is the line printed for each second of a run, local or on the server.
func formatLive(elapsed time.Duration, vus int64, rps float64, p50, p95, p99 time.Duration, errPct, cpu float64) string {
	return fmt.Sprintf("%6s  vus %4d  %8.0f req/s  p50 %-8s p95 %-8s p99 %-8s errors %5.2f%%  cpu %3.0f%%",
		elapsed.Round(time.Second), vus, rps, ms(p50), ms(p95), ms(p99), errPct, cpu*100)
}

func ms(d time.Duration) string {
	switch {
	case d >= time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + "s"
	case d >= time.Millisecond:
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + "ms"
	}
	return strconv.FormatFloat(float64(d)/float64(time.Microsecond), 'f', 0, 64) + "µs"
}

func pct(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) * 100 / float64(of)
}

func printSummary(w io.Writer, res *engine.Result) {
	fmt.Fprintf(w, "\n%s: %s model, %s, %d iterations", res.Script, res.Model, res.Elapsed.Round(time.Millisecond), res.Iterations)
	if res.Dropped > 0 {
		fmt.Fprintf(w, ", %d dropped", res.Dropped)
	}
	if res.Interrupted > 0 {
		fmt.Fprintf(w, ", %d interrupted", res.Interrupted)
	}
	if res.Unsent > 0 {
		fmt.Fprintf(w, ", %d requests not sent (a variable they use was not set)", res.Unsent)
	}
	fmt.Fprintln(w)
	if res.Stop.Reason != engine.Completed {
		fmt.Fprintf(w, "stopped early: %s\n", res.Stop.Detail)
	}
	if res.Exhausted != "" {
		fmt.Fprintf(w, "ended early: %s\n", res.Exhausted)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tcount\trate/s\terrors\tmin\tmean\tp50\tp90\tp95\tp99\tmax\t")
	row := func(name string, st *metrics.Stats) {
		h := st.Latency
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.2f%%\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, st.Requests,
			float64(st.Requests)/res.Elapsed.Seconds(), pct(st.Failed(), st.Requests),
			ms(h.Min()), ms(h.Mean()), ms(h.Quantile(0.5)), ms(h.Quantile(0.9)), ms(h.Quantile(0.95)), ms(h.Quantile(0.99)), ms(h.Max()))
	}
	for _, l := range res.Requests {
		if st, ok := res.Total.Labels[l]; ok {
			row(l, st)
		}
	}
	row("all requests", requestStats(res.Total, res.Requests))
	for _, g := range res.Groups {
		if st, ok := res.Total.Labels[engine.GroupPrefix+g]; ok {
			row("group "+g, st)
		}
	}
	// Time in url plugins' hooks is not in the requests' times: it is shown beside them, one
	// row per plugin (a call is a before or an after).
	for _, a := range res.Hooks {
		if st, ok := res.Total.Labels[engine.HookPrefix+a]; ok {
			row("hook "+a+" (calls)", st)
		}
	}
	tw.Flush()
	if errs := errorBreakdown(requestStats(res.Total, res.Requests)); errs != "" {
		fmt.Fprintln(w, "errors:", errs)
	}
	for _, reason := range slices.Sorted(maps.Keys(res.HookErrors)) {
		fmt.Fprintf(w, "plugin failures: %d × %s\n", res.HookErrors[reason], reason)
	}
	if len(res.Thresholds) > 0 {
		fmt.Fprintln(w, "\nthresholds:")
		for _, t := range res.Thresholds {
			fmt.Fprintln(w, " ", t)
		}
	}
	fmt.Fprintln(w, "\n"+res.Verdict.String())
}

func errorBreakdown(st *metrics.Stats) string {
	var parts []string
	for c := metrics.ErrorClass(1); c < metrics.NumErrorClasses; c++ {
		if n := st.Errors[c]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c, n))
		}
	}
	return strings.Join(parts, ", ")
}

// resultJSON is the --out document.
type resultJSON struct {
	Script     string              `json:"script"`
	Model      string              `json:"model"`
	Start      time.Time           `json:"start"`
	ElapsedS   float64             `json:"elapsed_s"`
	Iterations int64               `json:"iterations"`
	Dropped    int64               `json:"dropped"`
	Unsent     int64               `json:"unsent"`
	Stop       engine.Stop         `json:"stop"`
	Total      summary.Label       `json:"total"`
	Requests   []summary.Label     `json:"requests"`
	Groups     []summary.Label     `json:"groups"`
	Hooks      []summary.Label     `json:"hooks,omitempty"`
	HookErrors map[string]int64    `json:"hook_errors,omitempty"`
	Exhausted  string              `json:"exhausted,omitempty"`
	Thresholds []summary.Threshold `json:"thresholds"`
	Verdict    summary.Verdict     `json:"verdict"`
	Errors     map[string]int64    `json:"errors"`
}

func writeResultJSON(path string, res *engine.Result) error {
	all := requestStats(res.Total, res.Requests)
	doc := resultJSON{
		Script: res.Script, Model: res.Model.String(), Start: res.Start, ElapsedS: res.Elapsed.Seconds(),
		Iterations: res.Iterations, Dropped: res.Dropped, Unsent: res.Unsent, Stop: res.Stop,
		Total:      summary.NewLabel("all requests", all, res.Elapsed),
		Verdict:    summary.Verdict{GeneratorLimited: res.Verdict.GeneratorLimited, Reasons: res.Verdict.Reasons},
		Errors:     summary.Errors(all),
		HookErrors: res.HookErrors, Exhausted: res.Exhausted,
	}
	for _, l := range res.Requests {
		if st, ok := res.Total.Labels[l]; ok {
			doc.Requests = append(doc.Requests, summary.NewLabel(l, st, res.Elapsed))
		}
	}
	for _, g := range res.Groups {
		if st, ok := res.Total.Labels[engine.GroupPrefix+g]; ok {
			doc.Groups = append(doc.Groups, summary.NewLabel(g, st, res.Elapsed))
		}
	}
	for _, a := range res.Hooks {
		if st, ok := res.Total.Labels[engine.HookPrefix+a]; ok {
			doc.Hooks = append(doc.Hooks, summary.NewLabel(a, st, res.Elapsed))
		}
	}
	for _, t := range res.Thresholds {
		doc.Thresholds = append(doc.Thresholds, summary.Threshold{Check: t.Threshold.Source, Observed: t.Observed, Passed: t.Passed})
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// seriesWriter streams the per-second series as CSV while the run goes on, so that a long run's
// seconds need not be kept in memory.
type seriesWriter struct {
	f   *os.File
	w   *csv.Writer
	err error
}

func newSeriesWriter(path string) (*seriesWriter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	sw := &seriesWriter{f: f, w: csv.NewWriter(f)}
	head := []string{"second", "label", "count", "rps"}
	for c := metrics.ErrorClass(1); c < metrics.NumErrorClasses; c++ {
		head = append(head, "errors_"+c.String())
	}
	head = append(head, "bytes_in", "bytes_out", "p50_ms", "p95_ms", "p99_ms", "max_ms", "cpu", "vus")
	sw.err = sw.w.Write(head)
	return sw, nil
}

func (sw *seriesWriter) write(sec engine.Second) {
	if sw.err != nil {
		return
	}
	fms := func(d time.Duration) string {
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64)
	}
	labels := make([]string, 0, len(sec.Snapshot.Labels))
	for l := range sec.Snapshot.Labels {
		labels = append(labels, l)
	}
	slices.Sort(labels)
	for _, l := range labels {
		st := sec.Snapshot.Labels[l]
		rec := []string{strconv.FormatFloat(sec.Elapsed.Seconds(), 'f', 0, 64), l, strconv.FormatInt(st.Requests, 10),
			strconv.FormatFloat(float64(st.Requests)/max(sec.Snapshot.Duration.Seconds(), 1e-9), 'f', 1, 64)}
		for c := metrics.ErrorClass(1); c < metrics.NumErrorClasses; c++ {
			rec = append(rec, strconv.FormatInt(st.Errors[c], 10))
		}
		rec = append(rec, strconv.FormatInt(st.BytesIn, 10), strconv.FormatInt(st.BytesOut, 10),
			fms(st.Latency.Quantile(0.5)), fms(st.Latency.Quantile(0.95)), fms(st.Latency.Quantile(0.99)), fms(st.Latency.Max()),
			strconv.FormatFloat(sec.Health.CPU, 'f', 3, 64), strconv.FormatInt(sec.Health.ActiveVUs, 10))
		if sw.err = sw.w.Write(rec); sw.err != nil {
			return
		}
	}
	sw.w.Flush()
	sw.err = sw.w.Error()
}

// close flushes and closes the file once; later calls return the first error.
func (sw *seriesWriter) close() error {
	if sw.f == nil {
		return sw.err
	}
	sw.w.Flush()
	if sw.err == nil {
		sw.err = sw.w.Error()
	}
	if err := sw.f.Close(); sw.err == nil {
		sw.err = err
	}
	sw.f = nil
	return sw.err
}
