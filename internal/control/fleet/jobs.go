package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control/plugins"
	"github.com/barrage-load/barrage/internal/postgres"
	"github.com/barrage-load/barrage/internal/script"
)

// JobWait is how long a debug or a generation waits for its agent; an agent gives a debug
// DebugTimeout, and the rest is for the way there and back.
const JobWait = 45 * time.Second

// MaxOpenJobs is how many debug and generate jobs of one user may wait for an answer at once:
// agents are shared, and a job holds its asker's request open while it waits.
const MaxOpenJobs = 4

// DebugTimeout bounds one traced iteration on an agent.
const DebugTimeout = 35 * time.Second

// takeJobs hands agent a, which holds the whole kernel sandbox or not (sandbox), the jobs
// waiting for it whose askers still wait, as many as it has free slots: on a shared agent, one
// per user at a time. Each carries only the data files its test's revision reads. A job whose
// marketplace plugins the agent may not run without the sandbox is answered with why.
func (s *Service) takeJobs(ctx context.Context, a barrage.Agent, sandbox bool) ([]barrage.AgentJob, error) {
	slots := postgres.JobSlots{Slots: barrage.AgentJobSlots, PerOwner: barrage.AgentJobSlots}
	if a.Shared() {
		slots.PerOwner = 1
	}
	jobs, err := s.store.TakeAgentJobs(ctx, a.ID, s.now().Add(-JobWait), slots, script.FilesOf)
	if err != nil {
		return nil, err
	}
	kept := jobs[:0]
	for _, j := range jobs {
		why, err := s.deps.Plugins.SandboxRefuses(ctx, a, sandbox, j.Plugins)
		if err == nil && why == "" && j.Kind == barrage.JobDebug && j.Bundle != nil {
			why, err = s.jobSecrets(ctx, &j)
		}
		if err == nil && why == "" && a.Shared() {
			// A debug sends requests, and a generation may run plugins that reach out: on a
			// shared agent, they reach only what a run of the test's project could.
			j.Destinations, err = s.deps.Targets.Verified(ctx, j.Bundle.ProjectID)
			if j.Destinations != nil && a.Protocol < barrage.DestinationsProtocol {
				why = tooOldForDestinations(a, "job")
			}
		}
		switch {
		case err != nil:
			return nil, err
		case why != "":
			if err := s.store.AnswerAgentJob(ctx, a.ID, j.ID, nil, &why); err != nil {
				return nil, err
			}
		default:
			kept = append(kept, j)
		}
	}
	return kept, nil
}

// jobSecrets hands debug job j the values of its test's project's secrets its script reads: why
// it cannot have them (deleted since it was asked for), or an error.
func (s *Service) jobSecrets(ctx context.Context, j *barrage.AgentJob) (string, error) {
	parsed, err := script.CheckBundle(j.Bundle.Source, j.Bundle.Files)
	if err != nil || len(parsed.Secrets) == 0 {
		return "", nil // the agent says what is wrong with the script
	}
	var missing *barrage.InvalidError
	j.Secrets, err = s.deps.Secrets.Values(ctx, j.Bundle.ProjectID, parsed.Secrets)
	if errors.As(err, &missing) {
		return missing.Fields[0].Reason, nil
	}
	return "", err
}

// RunJob hands j, on a test of project whose script uses the marketplace plugins given, to an
// agent of the project or a shared one that may run them, and waits for its answer. An answer
// that is an error comes back as an invalid input, since it is the test that the agent could not
// run (a plugin it does not have, a config its plugin refused).
func (s *Service) RunJob(ctx context.Context, p barrage.Principal, project uuid.UUID, j barrage.AgentJob, agentID *uuid.UUID, market []plugins.Resolved) (barrage.Agent, barrage.AgentJob, error) {
	a, err := s.jobAgent(ctx, project, agentID, market)
	if err != nil {
		return a, j, err
	}
	j.ID, j.AgentID, j.OwnerID, j.Plugins = uuid.Must(uuid.NewV7()), a.ID, p.User.ID, plugins.Pins(market)
	err = s.await(ctx, j.ID, JobWait, func() error {
		return s.store.CreateAgentJob(ctx, j, MaxOpenJobs, s.now().Add(-JobWait))
	}, func() (bool, error) {
		var err error
		j, err = s.store.AgentJob(ctx, j.ID)
		return err == nil && j.Answered != nil, err
	})
	switch {
	case errors.Is(err, barrage.ErrNoAnswer):
		return a, j, barrage.Errorf(barrage.ErrNoAnswer, "agent %q did not answer within %s", a.Name, JobWait)
	case err != nil:
		return a, j, err
	case j.TestID == uuid.Nil:
		return a, j, barrage.Errorf(barrage.ErrNotFound, "test not found: it was deleted while agent %q had the %s", a.Name, j.Kind)
	case j.Error != "":
		return a, j, barrage.Invalid("agent", fmt.Sprintf("agent %q could not %s the test: %s", a.Name, j.Kind, j.Error))
	}
	return a, j, nil
}

// jobAgent is the agent a job on a test of project goes to: the one asked for, else the first
// online one of the project or shared that may run the job's marketplace plugins. Jobs go to busy
// agents too: they are small, and an agent does them beside its shard.
func (s *Service) jobAgent(ctx context.Context, project uuid.UUID, id *uuid.UUID, market []plugins.Resolved) (barrage.Agent, error) {
	now := s.now()
	if id != nil {
		a, err := s.store.UsableAgent(ctx, []uuid.UUID{project}, *id)
		if err != nil {
			return a, err
		}
		if st := a.State(now); st == barrage.AgentOffline || st == barrage.AgentDisabled {
			return a, barrage.Invalid("agent_id", fmt.Sprintf("agent %q is %s", a.Name, st))
		}
		return a, plugins.CanRunOn(a, market, "agent_id")
	}
	all, err := s.store.UsableAgents(ctx, []uuid.UUID{project})
	if err != nil {
		return barrage.Agent{}, err
	}
	var refused error
	for _, a := range all {
		if st := a.State(now); st != barrage.AgentOnline && st != barrage.AgentBusy {
			continue
		}
		if refused = plugins.CanRunOn(a, market, "agent_id"); refused == nil {
			return a, nil
		}
	}
	if refused != nil {
		return barrage.Agent{}, refused
	}
	return barrage.Agent{}, barrage.Invalid("agent_id", "no agent of the project, nor a shared one, is online: start one (barrage agent) or ask an admin")
}

// JobAnswer is an agent's answer to a job: its result, of the job's kind, or why it could not
// do it.
type JobAnswer struct {
	Kind   barrage.JobKind
	Result json.RawMessage
	Error  string
}

// AnswerJob records agent a's answer to its job id.
func (s *Service) AnswerJob(ctx context.Context, a barrage.Agent, id uuid.UUID, ans JobAnswer) error {
	var errText *string
	if ans.Error != "" {
		errText = &ans.Error
	}
	if ans.Error == "" && len(ans.Result) == 0 {
		return barrage.Invalid("result", "give the job's result or its error")
	}
	if ans.Error == "" {
		j, err := s.store.AgentJob(ctx, id)
		if err != nil || j.AgentID != a.ID {
			return barrage.Errorf(barrage.ErrNotFound, "job not found")
		}
		if j.Kind != ans.Kind {
			return barrage.Invalid(string(ans.Kind), fmt.Sprintf("the job is a %s: answer with its result or an error", j.Kind))
		}
	}
	return s.store.AnswerAgentJob(ctx, a.ID, id, ans.Result, errText)
}

// await waits up to timeout for done to report true, woken when key is notified (on any
// replica) and checking every PollEvery besides. start runs first, once the wake-up is
// subscribed to, so that no answer is missed. It returns barrage.ErrNoAnswer on timeout.
func (s *Service) await(ctx context.Context, key uuid.UUID, timeout time.Duration, start func() error, done func() (bool, error)) error {
	woken, stop := s.deps.Changes.Subscribe(key.String())
	defer stop()
	if err := start(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		ok, err := done()
		if ok {
			return nil
		}
		if err != nil && ctx.Err() == nil {
			return err
		}
		t := time.NewTimer(s.cfg.PollEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return barrage.ErrNoAnswer
		case <-woken:
			t.Stop()
		case <-t.C:
		}
	}
}
