package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/run"
)

// Hello is what an agent says of itself each time it asks for work.
type Hello struct {
	Protocol int
	Version  string
	Cores    int
	IP       string
	// Sandbox says whether the agent's plugin host holds the whole kernel sandbox.
	Sandbox bool
}

// leaseLooks is how many of PollEvery a waiting lease lets pass between its looks.
const leaseLooks = 4

// MaxLeaseWait bounds how long a lease request waits for work: well under
// barrage.AgentOnlineWithin, since a waiting agent is seen only when it asks again.
const MaxLeaseWait = 5 * time.Second

// Work is what an agent is given when it asks: a shard to run, pings to answer, jobs to do
// (debug, generate), or none of these.
type Work struct {
	Shard *barrage.ShardJob
	Pings []uuid.UUID
	Jobs  []barrage.AgentJob
}

// Lease waits up to wait for work for agent a: pings to answer, or a shard, handed over under a
// new fencing token. An agent speaking a protocol older than the server accepts is refused with
// a message that names the version it needs.
func (s *Service) Lease(ctx context.Context, a barrage.Agent, h Hello, wait time.Duration) (Work, error) {
	if h.Protocol < barrage.MinAgentProtocol {
		return Work{}, barrage.Errorf(barrage.ErrOutdated,
			"this server needs agents that speak protocol %d or newer; this agent (version %q) speaks %d: upgrade it to the server's version",
			barrage.MinAgentProtocol, h.Version, h.Protocol)
	}
	if err := s.store.AgentSeen(ctx, a.ID, h.Version, h.Cores, h.IP, h.Sandbox, h.Protocol); err != nil {
		return Work{}, err
	}
	a.Protocol = h.Protocol
	wait = min(max(wait, 0), MaxLeaseWait)
	deadline := s.now().Add(wait)
	woken, stop := s.deps.Work.Subscribe(a.ID.String())
	defer stop()
	for {
		var w Work
		// A look costs one round trip, and takes what there is only when there is something:
		// a thousand agents waiting look twice a second each.
		waiting, err := s.store.AgentWorkWaiting(ctx, a.ID, s.now().Add(-JobWait))
		if err != nil {
			return Work{}, err
		}
		if waiting {
			if w, err = s.take(ctx, a, h); err != nil {
				return Work{}, err
			}
		}
		if w.Shard != nil || len(w.Pings) > 0 || len(w.Jobs) > 0 {
			return w, nil
		}
		left := deadline.Sub(s.now())
		if left <= 0 {
			return Work{}, nil
		}
		// A notification wakes it at once; the looks between are for one that was lost (a
		// replica's LISTEN reconnecting), and a thousand idle agents looking twice a second cost
		// half a core: a lease looks every four polls' time.
		t := time.NewTimer(min(left, leaseLooks*s.cfg.PollEvery))
		select {
		case <-ctx.Done():
			t.Stop()
			return Work{}, nil
		case <-woken:
			t.Stop()
		case <-t.C:
		}
	}
}

// take hands agent a what waits for it: pings, jobs, and a shard it may run (one it may not is
// failed, saying why).
func (s *Service) take(ctx context.Context, a barrage.Agent, h Hello) (Work, error) {
	var w Work
	var err error
	if w.Pings, err = s.store.TakePings(ctx, a.ID); err != nil {
		return w, err
	}
	if w.Jobs, err = s.takeJobs(ctx, a, h.Sandbox); err != nil {
		return w, err
	}
	if w.Shard, err = s.store.LeaseShard(ctx, a.ID, h.Version, s.cfg.StartLead); err != nil {
		return w, err
	}
	if w.Shard != nil {
		// The sandbox is checked as the agent says it is now, not as it was at admission.
		why, err := s.deps.Plugins.SandboxRefuses(ctx, a, h.Sandbox, w.Shard.Run.Manifest.Plugins)
		if err != nil {
			return w, err
		}
		switch r := w.Shard.Run; {
		case r.Destinations != nil && h.Protocol < barrage.DestinationsProtocol:
			why = tooOldForDestinations(a, "run")
		case (len(r.Manifest.Env) > 0 || len(r.Manifest.Secrets) > 0) && h.Protocol < barrage.EnvProtocol:
			why = fmt.Sprintf("agent %q speaks protocol %d, which cannot hand a run's environment (env, -e) or secrets to its script (%d can): upgrade it",
				a.Name, a.Protocol, barrage.EnvProtocol)
		case len(r.Manifest.Secrets) > 0:
			// Read now, not at the run's creation: a secret deleted since fails the shard.
			var missing *barrage.InvalidError
			w.Shard.Secrets, err = s.deps.Secrets.Values(ctx, r.ProjectID, r.Manifest.Secrets)
			if errors.As(err, &missing) {
				why, err = fmt.Sprintf("secret %s, which the script reads, was deleted after the run was created",
					strings.TrimPrefix(missing.Fields[0].Field, "secrets.")), nil
			}
			if err != nil {
				return w, err
			}
		}
		if why != "" {
			end := &barrage.ShardEnd{State: barrage.ShardState(run.Failed.String()), Reason: why, Result: json.RawMessage("{}")}
			if _, err := s.storeReport(ctx, a, w.Shard.Shard.ID, w.Shard.Shard.Lease, nil, end); err != nil {
				return w, err
			}
			w.Shard = nil
		}
	}
	if w.Shard != nil {
		s.log.InfoContext(ctx, "shard leased", slog.String("run_id", w.Shard.Run.ID.String()),
			slog.String("shard_id", w.Shard.Shard.ID.String()), slog.String("agent_id", a.ID.String()))
	}
	return w, nil
}

// tooOldForDestinations is why agent a, which speaks a protocol older than
// barrage.DestinationsProtocol, is given no run or job (what) bounded to destinations.
func tooOldForDestinations(a barrage.Agent, what string) string {
	return fmt.Sprintf("agent %q speaks protocol %d, which cannot hold a %s to its owner's verified targets (%d can): upgrade it",
		a.Name, a.Protocol, what, barrage.DestinationsProtocol)
}
