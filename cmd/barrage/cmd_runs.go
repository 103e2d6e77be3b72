package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/quantity"
	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/internal/summary"
)

func runRuns(ctx context.Context, e env, args []string) error {
	sub := map[string]func(context.Context, env, []string) error{
		"start": runRunsStart, "list": runRunsList, "show": runRunsShow, "watch": runRunsWatch, "cancel": runRunsCancel, "results": runRunsResults,
		"compare": runRunsCompare,
		"report":  runRunsReport,
		"sweep":   runRunsSweep,
	}
	return dispatch(ctx, e, "runs", sub, args)
}

func runRunsStart(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "runs start", "(--file SCRIPT | --script ID | --test ID) [-e NAME=VALUE...] [--vus N --duration D --rate R --stage D:R... | --sweep 2,4,8 --step 30s] [--agents N --agent ID] [--project P] [--watch | --wait [--junit FILE]]")
	inProj := projectFlag(fs)
	envs := addEnvFlag(fs)
	file := fs.String("file", "", "upload this script (and the data files it names, from beside it) and run it")
	scriptID := fs.String("script", "", "run this stored script")
	testID := fs.String("test", "", "run this test's latest revision (its script is generated first)")
	lf := addLoadFlags(fs)
	agents := fs.Int("agents", 0, "how many idle online agents to run on (default 1)")
	var agentIDs multiFlag
	fs.Var(&agentIDs, "agent", "run on this agent (repeat for several)")
	watch := fs.Bool("watch", false, "follow the run to its end second by second, print its summary, and exit as --wait does")
	wait := fs.Bool("wait", false, "wait for the run's end without its live lines (for CI), print its summary, and exit 99 when a threshold failed or it regressed against its test's baseline, 1 when it did not finish")
	junit := fs.String("junit", "", "with --watch or --wait, write the run's verdicts to this file as JUnit XML")
	key := fs.String("idempotency-key", "", "retrying with the same key returns the same run")
	var levels levelsFlag
	fs.Var(&levels, "sweep", "run a concurrency sweep at these VUs, ascending, comma-separated (2,4,8,16), in place of the script's load")
	step := durationFlag(fs, "step", 30*time.Second, "with --sweep, how long each level runs")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	if *watch && *wait {
		return usageError(errors.New("--watch and --wait: choose one"))
	}
	if *junit != "" && !*watch && !*wait {
		return usageError(errors.New("--junit: the run's verdicts come at its end: add --wait (or --watch)"))
	}
	if *agents < 0 || (*agents == 0 && flagGiven(fs, "agents")) {
		return usageError(fmt.Errorf("--agents %d: must be at least 1", *agents))
	}
	given := 0
	for _, f := range []string{*file, *scriptID, *testID} {
		if f != "" {
			given++
		}
	}
	if given != 1 {
		fs.Usage()
		return errUsage
	}
	load, err := lf.overrides()
	if err != nil {
		return err
	}
	if len(levels) > 0 {
		if *step%time.Second != 0 {
			return usageError(fmt.Errorf("--step %s: runs on agents count steps in whole seconds", *step))
		}
		load.Sweep = &barrage.Sweep{VUs: levels, Step: *step}
		if err := load.Validate(); err != nil {
			return usageError(err)
		}
	}
	// The server counts whole seconds.
	if load.Duration%time.Second != 0 {
		return usageError(fmt.Errorf("--duration %s: runs on agents last whole seconds", load.Duration))
	}
	for _, st := range load.Stages {
		if st.Duration%time.Second != 0 {
			return usageError(fmt.Errorf("--stage %s: runs on agents count stages in whole seconds", st.Duration))
		}
	}
	cl, err := jobClient(ctx, e) // a run of a test may wait for its generation on an agent
	if err != nil {
		return err
	}
	var body api.CreateRunRequest
	if *testID != "" {
		tid, err := uuid.Parse(*testID)
		if err != nil {
			return usageError(fmt.Errorf("test id %q: %w", *testID, err))
		}
		body.TestId = &tid
	} else {
		id := *scriptID
		if *file != "" {
			project, err := inProj.id(ctx, e, cl)
			if err != nil {
				return err
			}
			if id, err = uploadScript(ctx, e, cl, project, *file); err != nil {
				return err
			}
			fmt.Fprintf(e.stderr, "Script %s uploaded as %s.\n", *file, id)
		}
		sid, err := uuid.Parse(id)
		if err != nil {
			return usageError(fmt.Errorf("script id %q: %w", id, err))
		}
		body.ScriptId = &sid
	}
	l := api.LoadOf(load)
	body.Vus, body.DurationSeconds, body.Rate, body.Stages, body.Sweep = l.Vus, l.DurationSeconds, l.Rate, l.Stages, l.Sweep
	if *agents > 0 {
		body.Agents = agents
	}
	if len(*envs) > 0 {
		body.Env = ptr(api.RunEnv(*envs))
	}
	for _, a := range agentIDs {
		u, err := uuid.Parse(a)
		if err != nil {
			return usageError(fmt.Errorf("agent id %q: %w", a, err))
		}
		if body.AgentIds == nil {
			body.AgentIds = &[]uuid.UUID{}
		}
		*body.AgentIds = append(*body.AgentIds, u)
	}
	params := &api.CreateRunParams{}
	if *key != "" {
		params.IdempotencyKey = key
	}
	res, err := cl.CreateRunWithResponse(ctx, params, body)
	if err != nil {
		return err
	}
	if res.JSON201 == nil {
		return api.ProblemError(res.HTTPResponse, res.Body)
	}
	run := res.JSON201
	fmt.Fprintf(e.stderr, "Run %s %s on %d agent(s).\n", run.Id, run.State, len(run.Shards))
	if note := lf.chosenVUs(deref(run.Vus)); note != "" && run.Load.Sweep == nil {
		fmt.Fprintln(e.stderr, note)
	}
	printPins(e, run.Manifest.Plugins)
	for _, w := range deref(run.Manifest.Warnings) {
		fmt.Fprintln(e.stderr, "warning: "+w)
	}
	fmt.Fprintln(e.stdout, run.Id)
	switch {
	case *watch:
		err = watchRun(ctx, e, cl, run.Id)
	case *wait:
		err = waitRun(ctx, e, cl, run.Id)
	default:
		return nil
	}
	if *junit != "" && ctx.Err() == nil {
		if jerr := writeJUnit(ctx, e, cl, run.Id, *junit); jerr != nil {
			return jerr
		}
	}
	return err
}

// eachScriptFile reads every file the script at path names, from inside its folder (a symbolic
// link out of it is refused), and hands each to f. The server keeps a script's files by one name
// beside it: a file in a subfolder is refused here, saying so, before anything is sent.
func eachScriptFile(path string, s *script.Script, f func(name string, data []byte) error) error {
	root, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer root.Close()
	for _, name := range s.Files() {
		if strings.Contains(name, "/") {
			return usageError(fmt.Errorf("script file %s: the server keeps a script's files by one name, beside the script, without folders: move it next to the script", name))
		}
		data, err := root.ReadFile(name)
		if err != nil {
			return fmt.Errorf("script file: %w", err)
		}
		if err := f(name, data); err != nil {
			return err
		}
	}
	return nil
}

// uploadScript stores the script at path in project (nil: the home project), with the data files
// it names, and returns its id.
func uploadScript(ctx context.Context, e env, cl *api.ClientWithResponses, project *uuid.UUID, path string) (string, error) {
	s, err := loadScript(e, path) // checked here first: the errors point at the local file
	if err != nil {
		return "", err
	}
	source, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	body := api.CreateScriptRequest{Source: string(source)}
	var files []api.UploadFile
	err = eachScriptFile(path, s, func(name string, data []byte) error {
		files = append(files, api.UploadFile{Name: name, Content: data})
		return nil
	})
	if err != nil {
		return "", err
	}
	if files != nil {
		body.Files = &files
	}
	res, err := cl.CreateScriptWithResponse(ctx, &api.CreateScriptParams{Project: project}, body)
	if err != nil {
		return "", err
	}
	if res.JSON201 == nil {
		return "", api.ProblemError(res.HTTPResponse, res.Body)
	}
	return res.JSON201.Id.String(), nil
}

// watchRun follows a run to its end through its live stream, printing the same line each second
// as `barrage run` does, then prints its summary. The exit status is that of `barrage run`: 99
// when a threshold failed, 1 when the run did not finish. A stream that breaks is resumed after
// the last second it gave.
func watchRun(ctx context.Context, e env, cl *api.ClientWithResponses, id uuid.UUID) error {
	last := "-1"
	for {
		ended, err := followLive(ctx, e, id, &last)
		if ended {
			break
		}
		if ctx.Err() != nil {
			return errors.New("stopped watching; the run goes on (barrage runs cancel " + id.String() + " stops it)")
		}
		fmt.Fprintf(e.stderr, "the live stream broke (%v); resuming\n", err)
		sleep(ctx, time.Second)
	}
	return printEnded(ctx, e, cl, id)
}

// waitEvery is how often `runs start --wait` asks whether the run has ended.
const waitEvery = 2 * time.Second

// waitRun waits for run id's end, saying on stderr when its state changes, then prints its
// summary as watchRun does, with its exit status. A failed request is retried: the run goes on
// whether or not the server answered.
func waitRun(ctx context.Context, e env, cl *api.ClientWithResponses, id uuid.UUID) error {
	var last api.RunState
	for {
		res, err := cl.GetRunWithResponse(ctx, id)
		switch {
		case ctx.Err() != nil:
			return errors.New("stopped waiting; the run goes on (barrage runs cancel " + id.String() + " stops it)")
		case err != nil:
			fmt.Fprintf(e.stderr, "could not read the run (%v); trying again\n", err)
		case res.JSON200 == nil:
			if res.StatusCode() < 500 && res.StatusCode() != http.StatusTooManyRequests {
				return api.ProblemError(res.HTTPResponse, res.Body)
			}
			fmt.Fprintf(e.stderr, "could not read the run (%s); trying again\n", res.Status())
		default:
			r := res.JSON200
			if r.State != last {
				fmt.Fprintf(e.stderr, "%s  run %s: %s\n", time.Now().Format(time.TimeOnly), id, r.State)
				last = r.State
			}
			if r.EndedAt != nil {
				return printEnded(ctx, e, cl, id)
			}
		}
		sleep(ctx, waitEvery)
	}
}

// printEnded prints the results of run id, which has ended, with the exit status they make.
func printEnded(ctx context.Context, e env, cl *api.ClientWithResponses, id uuid.UUID) error {
	res, err := cl.GetRunWithResponse(ctx, id)
	if err != nil {
		return err
	}
	if res.JSON200 == nil {
		return api.ProblemError(res.HTTPResponse, res.Body)
	}
	if r := res.JSON200; r.Load.Sweep != nil && r.State == api.RunStateFinished {
		// A sweep's result is its levels, fit and knee, not an average over all its levels.
		fmt.Fprintf(e.stdout, "\nrun %s: %s (%s)\n", r.Id, r.State, r.Reason)
		_, err := printSweep(ctx, e, cl, r.Id)
		return err
	}
	return printRunResults(ctx, e, cl, res.JSON200)
}

// followLive reads the run's live stream after the second *last, printing each second and each
// change of state, until the run's end event (ended) or an error.
func followLive(ctx context.Context, e env, id uuid.UUID, last *string) (ended bool, err error) {
	cl, _, err := apiClientWith(ctx, e, true, &http.Client{}) // a stream has no deadline
	if err != nil {
		return false, err
	}
	res, err := cl.GetRunLive(ctx, id, &api.GetRunLiveParams{LastEventID: last})
	if err != nil {
		return false, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(res.Body)
		return false, api.ProblemError(res, body)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var event, evID string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "id: "):
			evID = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			data := []byte(strings.TrimPrefix(line, "data: "))
			switch event {
			case "second":
				var sec api.LiveSecond
				if err := json.Unmarshal(data, &sec); err != nil {
					return false, err
				}
				// As barrage run does: a last second of less than half a second would print its
				// own line under the same elapsed time, at a rate no one saw (its requests are in
				// the summary).
				if sec.DurationS == nil || *sec.DurationS >= 0.5 {
					fmt.Fprintln(e.stderr, remoteLiveLine(sec))
				}
				*last = evID
			case "shard":
				var sh api.Shard
				if err := json.Unmarshal(data, &sh); err != nil {
					return false, err
				}
				fmt.Fprintln(e.stderr, shardLine(&sh))
			case "state", "end":
				var run api.Run
				if err := json.Unmarshal(data, &run); err != nil {
					return false, err
				}
				fmt.Fprintln(e.stderr, runLine(&run))
				if event == "end" {
					return true, nil
				}
			case "error":
				return false, fmt.Errorf("the server: %s", data)
			}
			event, evID = "", ""
		}
	}
	if err := sc.Err(); err != nil {
		return false, err
	}
	return false, io.ErrUnexpectedEOF
}

// remoteLiveLine is the live line of a run on the server: `barrage run`'s, from the merged second.
func remoteLiveLine(sec api.LiveSecond) string {
	l := summary.Live{Elapsed: time.Duration(sec.ElapsedS * float64(time.Second)), VUs: sec.ActiveVus, RPS: sec.Rps,
		Requests: sec.Requests, P50: summary.FromMillis(sec.P50Ms), P95: summary.FromMillis(sec.P95Ms), P99: summary.FromMillis(sec.P99Ms),
		Agents: len(sec.Agents)}
	for _, n := range sec.Errors {
		l.Failed += n
	}
	for _, a := range sec.Agents {
		l.CPU = max(l.CPU, a.Cpu)
	}
	if st := sec.Stability; st != nil {
		l.Stability = &summary.Stability{CV: st.Cv, MeanRPS: st.MeanRps, FromS: st.FromS, ToS: st.ToS, Seconds: st.Seconds,
			Limit: st.Limit, Unstable: st.Unstable}
	}
	return l.String()
}

// runLine is a run's state as --watch prints it: each shard's segment and state, and the reason.
func runLine(r *api.Run) string {
	var parts []string
	for _, sh := range r.Shards {
		parts = append(parts, fmt.Sprintf("%s %s", sh.Segment, sh.State))
	}
	line := fmt.Sprintf("%s  %s  [%s]", time.Now().Format("15:04:05"), r.State, strings.Join(parts, ", "))
	if r.Reason != "" {
		line += "  " + r.Reason
	}
	return line
}

// shardLine is a change of a shard's state as --watch prints it, when it happens: an agent lost
// or failed is said loudly, with why.
func shardLine(sh *api.Shard) string {
	what := string(sh.State)
	switch sh.State {
	case api.ShardStateRunning:
		what = "started"
	case api.ShardStateLost, api.ShardStateFailed, api.ShardStateTimedOut, api.ShardStateAbortedLimit:
		what = strings.ToUpper(what)
	}
	line := fmt.Sprintf("%s  agent %s (%s): %s", time.Now().Format("15:04:05"), shardAgent(sh), sh.Segment, what)
	if sh.Reason != "" && sh.State != api.ShardStateRunning {
		line += ": " + sh.Reason
	}
	return line
}

// shardAgent names a shard's agent: its id, or that it was removed.
func shardAgent(sh *api.Shard) string {
	if sh.AgentId == nil {
		return "(removed)"
	}
	return sh.AgentId.String()
}

// runStates lists the states a run can be in, as the API spells them.
func runStates() string {
	var out []string
	for _, st := range []api.RunState{api.RunStateCreated, api.RunStateQueued, api.RunStateStarting, api.RunStateRunning, api.RunStateFinished,
		api.RunStateFailed, api.RunStateCanceled, api.RunStateTimedOut, api.RunStateAbortedLimit, api.RunStateAbortedThreshold} {
		out = append(out, string(st))
	}
	return strings.Join(out, ", ")
}

func runRunsList(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "runs list", "[--test ID] [--state STATE[,STATE...]]... [--project P]")
	inProj := projectFlag(fs)
	testID := fs.String("test", "", "only the runs of this test")
	var states multiFlag
	fs.Var(&states, "state", "only the runs in these states: comma-separated, or repeated (queued,starting,running; finished,failed,canceled...)")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	params := api.ListRunsParams{}
	if *testID != "" {
		id, err := uuid.Parse(*testID)
		if err != nil {
			return usageError(fmt.Errorf("test id %q: %w", *testID, err))
		}
		params.TestId = &id
	}
	if len(states) > 0 {
		var want []api.RunState
		for _, v := range strings.Split(strings.Join(states, ","), ",") {
			st := api.RunState(strings.TrimSpace(v))
			if !st.Valid() {
				return usageError(fmt.Errorf("--state %q is not a run state: one of %s", v, runStates()))
			}
			if !slices.Contains(want, st) {
				want = append(want, st)
			}
		}
		params.State = &want
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	if params.Project, err = inProj.id(ctx, e, cl); err != nil {
		return err
	}
	return printTable(e, "ID\tSTATE\tSCRIPT\tLOAD\tAGENTS\tCREATED\tREQUESTS\tERRORS\tP95\tVERDICT",
		func(cursor *string) ([]api.Run, *string, error) {
			p := params
			p.Cursor = cursor
			res, err := cl.ListRunsWithResponse(ctx, &p)
			if err != nil {
				return nil, nil, err
			}
			if res.JSON200 == nil {
				return nil, nil, api.ProblemError(res.HTTPResponse, res.Body)
			}
			return res.JSON200.Items, res.JSON200.NextCursor, nil
		},
		func(r api.Run) string {
			requests, errs, p95, verdict := "-", "-", "-", "-"
			if o := r.Outcome; o != nil {
				requests, errs, p95 = fmt.Sprint(o.Requests), fmt.Sprintf("%.2f%%", o.ErrorRate*100), summary.MillisText(o.P95Ms)
				verdict = outcomeVerdict(o)
			}
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s", r.Id, r.State, r.Manifest.ScriptName, loadText(r),
				len(r.Shards), r.CreatedAt.Local().Format("2006-01-02 15:04"), requests, errs, p95, verdict)
		})
}

// loadText is a run's load in a few words: what it asked for instead of the script's, else the
// VUs admitted for the script's own.
func loadText(r api.Run) string {
	l := r.Load
	var parts []string
	switch {
	case l.Sweep != nil:
		parts = append(parts, fmt.Sprintf("sweep %v×%ds", l.Sweep.Vus, l.Sweep.StepSeconds))
	case l.Stages != nil:
		parts = append(parts, fmt.Sprintf("%d stages", len(*l.Stages)))
	case l.Rate != nil:
		parts = append(parts, quantity.FormatRate(*l.Rate))
	}
	if l.Vus != nil {
		parts = append(parts, fmt.Sprintf("%d vus", *l.Vus))
	} else if r.Vus != nil && l.Sweep == nil {
		parts = append(parts, fmt.Sprintf("%d vus", *r.Vus))
	}
	if l.DurationSeconds != nil {
		parts = append(parts, quantity.FormatDuration(time.Duration(*l.DurationSeconds)*time.Second))
	}
	return strings.Join(parts, " ")
}

// outcomeVerdict is an ended run's verdict in a word or two.
func outcomeVerdict(o *api.RunOutcome) string {
	var words []string
	if o.ErrorRate > 0 {
		words = append(words, fmt.Sprintf("%.3g%% errors", o.ErrorRate*100))
	}
	if o.ThresholdsFailed > 0 {
		words = append(words, fmt.Sprintf("%d threshold(s) failed", o.ThresholdsFailed))
	}
	if o.GeneratorLimited {
		words = append(words, "generator-limited")
	}
	if o.Incomplete {
		words = append(words, "INCOMPLETE")
	}
	if len(words) == 0 {
		return "ok"
	}
	return strings.Join(words, ", ")
}

// idArg reads the id of a what (a run, an agent), the one positional argument.
func idArg(fs *flag.FlagSet, args []string, what string) (uuid.UUID, error) {
	arg, err := positionalArg(fs, args)
	if err != nil {
		return uuid.Nil, err
	}
	id, err := uuid.Parse(arg)
	if err != nil {
		return uuid.Nil, usageError(fmt.Errorf("%s id %q: %w", what, arg, err))
	}
	return id, nil
}

// runRunsWatch follows a run that goes on, a colleague's too, as `runs start --watch` does.
func runRunsWatch(ctx context.Context, e env, args []string) error {
	cl, run, err := fetchRun(ctx, e, newFlags(e, "runs watch", "ID"), args)
	if err != nil {
		return err
	}
	return watchRun(ctx, e, cl, run.Id)
}

func runRunsShow(ctx context.Context, e env, args []string) error {
	cl, run, err := fetchRun(ctx, e, newFlags(e, "runs show", "ID"), args)
	if err != nil {
		return err
	}
	printRun(e, run)
	if run.EndedAt == nil {
		return nil
	}
	// An ended run says whether its figures are whole.
	var s struct {
		Incomplete *summary.Incomplete `json:"incomplete"`
	}
	if _, err := fetchSummary(ctx, cl, run.Id, &s); err != nil {
		return err
	}
	if s.Incomplete != nil {
		fmt.Fprintln(e.stdout, "\n"+s.Incomplete.String())
	}
	return nil
}

// fetchRun reads the run named by the one positional argument.
func fetchRun(ctx context.Context, e env, fs *flag.FlagSet, args []string) (*api.ClientWithResponses, *api.Run, error) {
	id, err := idArg(fs, args, "run")
	if err != nil {
		return nil, nil, err
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return nil, nil, err
	}
	res, err := cl.GetRunWithResponse(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if res.JSON200 == nil {
		return nil, nil, api.ProblemError(res.HTTPResponse, res.Body)
	}
	return cl, res.JSON200, nil
}

func printRun(e env, r *api.Run) {
	fmt.Fprintf(e.stdout, "run %s: %s", r.Id, r.State)
	if r.Reason != "" {
		fmt.Fprintf(e.stdout, " (%s)", r.Reason)
	}
	fmt.Fprintf(e.stdout, "\nscript %s, created %s\n", r.ScriptId, r.CreatedAt.Format(time.RFC3339))
	if env := deref(r.Manifest.Env); len(env) > 0 {
		var pairs []string
		for _, k := range slices.Sorted(maps.Keys(env)) {
			pairs = append(pairs, k+"="+env[k])
		}
		fmt.Fprintf(e.stdout, "env %s\n", strings.Join(pairs, " "))
	}
	if names := deref(r.Manifest.Secrets); len(names) > 0 {
		fmt.Fprintf(e.stdout, "secrets %s (values never shown)\n", strings.Join(names, " "))
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SHARD\tAGENT\tSEGMENT\tSTATE\tSTARTED\tENDED\tLATE START\tREASON")
	at := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.Local().Format("15:04:05")
	}
	for _, sh := range r.Shards {
		late := "-"
		if sh.LateStartMs != nil {
			late = (time.Duration(*sh.LateStartMs) * time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", sh.Id, shardAgent(&sh), sh.Segment, sh.State, at(sh.LeasedAt), at(sh.EndedAt), late, sh.Reason)
	}
	tw.Flush()
}

func runRunsCancel(ctx context.Context, e env, args []string) error {
	return byID(ctx, e, args, "runs cancel", "run", func(cl *api.ClientWithResponses, id uuid.UUID) error {
		res, err := cl.CancelRunWithResponse(ctx, id)
		if err != nil {
			return err
		}
		if res.JSON200 == nil {
			return api.ProblemError(res.HTTPResponse, res.Body)
		}
		fmt.Fprintf(e.stderr, "Run %s: %s; its agents stop within two seconds.\n", id, res.JSON200.State)
		return nil
	})
}

func runRunsResults(ctx context.Context, e env, args []string) error {
	cl, run, err := fetchRun(ctx, e, newFlags(e, "runs results", "ID"), args)
	if err != nil {
		return err
	}
	return printRunResults(ctx, e, cl, run)
}

// printRunResults prints an ended run's summary as `barrage run` prints its own, then each
// agent's share; its error carries the exit status.
func printRunResults(ctx context.Context, e env, cl *api.ClientWithResponses, r *api.Run) error {
	// The server's summary is the shared one, with the run's figures beside it.
	var s struct {
		ElapsedS float64 `json:"elapsed_s"`
		summary.Summary
		Agents []struct {
			Verdict summary.Verdict `json:"verdict"`
		} `json:"agents"` // as sum.Agents, in the same order
		Baseline *summary.BaselineComparison `json:"baseline"`
	}
	sum, err := fetchSummary(ctx, cl, r.Id, &s)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "\nrun %s: %s (%s), %.1fs on %d agent(s)\n", r.Id, r.State, r.Reason, s.ElapsedS, len(sum.Agents))
	s.Print(e.stdout)
	for i, a := range sum.Agents {
		agent := "(removed)"
		if a.AgentId != nil {
			agent = a.AgentId.String()
		}
		fmt.Fprintf(e.stdout, "agent %s: %s, %d requests, started %dms late\n", agent, a.State, a.Requests, a.LateStartMs)
		for _, line := range strings.Split(s.Agents[i].Verdict.String(), "\n") {
			fmt.Fprintln(e.stdout, "  "+line)
		}
	}
	if b := s.Baseline; b != nil {
		fmt.Fprintf(e.stdout, "\nagainst the test's baseline, run %s:\n", b.RunID)
		b.Print(e.stdout)
	}
	regressed := s.Baseline != nil && s.Baseline.Verdict == summary.Regressed
	switch {
	case r.State != api.RunStateFinished && r.State != api.RunStateAbortedThreshold:
		// A run that did not finish is that first: its figures stop short (a threshold that
		// aborted it is the threshold's).
		return fmt.Errorf("the run ended %s: %s", r.State, r.Reason)
	case s.Failed() && regressed:
		return &exitError{exitThresholds, fmt.Errorf("a threshold failed, and the run regressed against its test's baseline, run %s", s.Baseline.RunID)}
	case s.Failed():
		return &exitError{exitThresholds, errors.New("a threshold failed")}
	case regressed:
		return &exitError{exitThresholds, fmt.Errorf("the run regressed against its test's baseline, run %s", s.Baseline.RunID)}
	case r.State != api.RunStateFinished:
		return fmt.Errorf("the run ended %s: %s", r.State, r.Reason)
	}
	return nil
}

// writeJUnit writes the verdicts of run id, which has ended, to path as JUnit XML.
func writeJUnit(ctx context.Context, e env, cl *api.ClientWithResponses, id uuid.UUID, path string) error {
	res, err := cl.GetRunJUnitWithResponse(ctx, id)
	if err != nil {
		return err
	}
	if res.StatusCode() != http.StatusOK {
		return api.ProblemError(res.HTTPResponse, res.Body)
	}
	if err := writeWith(path, func(w io.Writer) error { _, err := w.Write(res.Body); return err }); err != nil {
		return err
	}
	fmt.Fprintln(e.stderr, "JUnit report written to", path)
	return nil
}

// fetchSummary reads the summary of run id, decoding it also into v: what the contract's type
// leaves out (the shared summary's own types) is read from the same document.
func fetchSummary(ctx context.Context, cl *api.ClientWithResponses, id uuid.UUID, v any) (*api.RunSummary, error) {
	res, err := cl.GetRunSummaryWithResponse(ctx, id)
	if err != nil {
		return nil, err
	}
	if res.JSON200 == nil {
		return nil, api.ProblemError(res.HTTPResponse, res.Body)
	}
	if err := json.Unmarshal(res.Body, v); err != nil {
		return nil, fmt.Errorf("the run's summary: %w", err)
	}
	return res.JSON200, nil
}

func ptr[T any](v T) *T { return &v }

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// byID runs a command of one id argument (cmd in its usage, what in its error) with the API's
// client.
func byID(ctx context.Context, e env, args []string, cmd, what string, run func(cl *api.ClientWithResponses, id uuid.UUID) error) error {
	id, err := idArg(newFlags(e, cmd, "ID"), args, what)
	if err != nil {
		return err
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	return run(cl, id)
}
