package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/engine"
	"github.com/barrage-load/barrage/internal/netpolicy"
	"github.com/barrage-load/barrage/internal/pluginhost"
	"github.com/barrage-load/barrage/internal/pluginset"
	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/script"
)

// The bounds of a debug's answer: it must fit the server's request limit (1 MiB by default),
// JSON's escapes included, so the previews of all requests share a budget.
const (
	debugTimeout     = 35 * time.Second // control.DebugTimeout
	debugPreview     = 4 << 10
	debugMaxRequests = 200
	debugBudget      = 400 << 10             // bytes of previews and variables in one answer
	maxJobs          = barrage.AgentJobSlots // jobs done at once, beside a shard
)

// startJobs does each job in the background, beside a shard if one runs, and answers it. A job
// beyond maxJobs under way is answered at once with an error.
func (a *Agent) startJobs(ctx context.Context, jobs *[]api.AgentJob) {
	if jobs == nil {
		return
	}
	for _, j := range *jobs {
		select {
		case a.jobSlots <- struct{}{}:
			go func() {
				defer func() { <-a.jobSlots }()
				a.answerJob(ctx, j, a.doJob(ctx, j))
			}()
		default:
			a.answerJob(ctx, j, api.JobAnswer{Error: ptr(fmt.Sprintf("the agent is doing %d jobs already; try again", maxJobs))})
		}
	}
}

// doJob does one job and returns the answer to send.
func (a *Agent) doJob(ctx context.Context, j api.AgentJob) api.JobAnswer {
	log := a.log.With(slog.String("job_id", j.Id.String()), slog.String("kind", string(j.Kind)))
	log.Info("job taken")
	files := make(map[string][]byte, len(j.Test.Files))
	for _, f := range j.Test.Files {
		files[f.Name] = f.Content
	}
	s, err := script.LoadBundle(j.Test.Source, files)
	if err == nil {
		err = a.canRun(s)
	}
	if err != nil {
		return api.JobAnswer{Error: ptr(errText(err))}
	}
	// A job reaches what a run of its owner's could: on a shared agent, the destinations the
	// server sent, the plugins' grants included.
	targets := a.targets(j.Destinations)
	host := a.cfg.PluginHost
	host.Targets = targets
	switch j.Kind {
	case api.Debug:
		trace, err := a.debug(ctx, pluginset.BundleOrigin(j.Test.Source, files), s, j.Plugins, host, targets, deref(j.Secrets))
		if err != nil {
			return api.JobAnswer{Error: ptr(errText(err))}
		}
		return api.JobAnswer{Debug: trace}
	case api.Generate:
		doc, pins, err := pluginset.Generate(ctx, j.Test.Source, s, pluginset.Options{Source: a.source(deref(j.Plugins)), Host: host})
		if err != nil {
			return api.JobAnswer{Error: ptr(errText(err))}
		}
		return api.JobAnswer{Generated: &api.GeneratedScript{Source: string(doc), Plugins: api.PinsOf(pins)}}
	}
	return api.JobAnswer{Error: ptr(fmt.Sprintf("this agent does not know jobs of kind %q: upgrade it", j.Kind))}
}

// canRun says why the agent cannot run s's plugins, if it cannot: an agent without a plugin
// directory (the demo agent inside serve, since the server process starts no plugin) runs none.
func (a *Agent) canRun(s *script.Script) error {
	if len(s.Plugins) > 0 && a.cfg.Plugins == "" {
		return fmt.Errorf("the test uses plugins (%s), and this agent runs none: use an agent started with `barrage agent`", s.Plugins[0].Ref)
	}
	return nil
}

// debug runs one traced iteration of s, whose marketplace plugins are market, with its
// plugins started by host, under the target policy targets.
func (a *Agent) debug(ctx context.Context, origin pluginset.Origin, s *script.Script, market *[]api.PluginPin,
	host pluginhost.Options, targets *netpolicy.Policy, secrets map[string]string) (*api.DebugTrace, error) {
	ctx, cancel := context.WithTimeout(ctx, debugTimeout)
	defer cancel()
	set, s, err := pluginset.Open(ctx, origin, s, pluginset.Options{Source: a.source(deref(market)), Host: host, VUs: 1})
	if err != nil {
		return nil, err
	}
	defer set.Close()
	trace := &api.DebugTrace{Passed: true, Requests: []api.TraceEntry{}}
	budget := debugBudget
	opts := engine.Options{Plugins: set.Plugins, Targets: targets, Secrets: secrets, Trace: func(ev run.TraceEvent) {
		if ev.Err != nil || len(ev.Failures) > 0 {
			trace.Passed = false
		}
		if len(trace.Requests) < debugMaxRequests {
			trace.Requests = append(trace.Requests, api.TraceEntryOf(ev, func(b []byte) string { return preview(b, &budget) }))
		}
	}}
	if err := engine.Debug(ctx, s, opts); err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			err = fmt.Errorf("the iteration took longer than a debug may (%s): the trace shows where it was", debugTimeout)
		}
		trace.Passed = false
		trace.Error = ptr(truncate(errText(err), 4096))
	}
	return trace, nil
}

// preview shows b as a trace entry does, in what is left of budget, which it spends.
func preview(b []byte, budget *int) string {
	n := min(debugPreview, max(*budget, 0))
	if n == 0 {
		return fmt.Sprintf("(%d bytes: the answer has no room left for previews)", len(b))
	}
	s := run.Preview(b, n)
	*budget -= len(s)
	return s
}

// answerJob sends a job's answer; a failure is logged: the asker's wait runs out.
func (a *Agent) answerJob(ctx context.Context, j api.AgentJob, ans api.JobAnswer) {
	if ans.Error != nil {
		ans.Error = ptr(truncate(*ans.Error, 8192))
	}
	res, err := a.client.AgentAnswerJobWithResponse(ctx, j.Id, ans)
	if err == nil && res.StatusCode() != http.StatusNoContent {
		err = api.ProblemError(res.HTTPResponse, res.Body)
		if ans.Error == nil && (res.StatusCode() == http.StatusRequestEntityTooLarge || res.StatusCode() == http.StatusUnprocessableEntity) {
			// The asker learns why rather than wait out the job.
			a.answerJob(ctx, j, api.JobAnswer{Error: ptr("the server refused the agent's answer: " + err.Error())})
			return
		}
	}
	if err != nil {
		a.log.Warn("answer a job", slog.String("job_id", j.Id.String()), slog.String("error", err.Error()))
		return
	}
	a.log.Info("job answered", slog.String("job_id", j.Id.String()), slog.Bool("failed", ans.Error != nil))
}

// errText is an error as the job's asker reads it: a script's list of errors, one per line.
func errText(err error) string {
	var list script.ErrorList
	if errors.As(err, &list) {
		return "the script is not valid:\n" + err.Error()
	}
	return err.Error()
}

func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
