// Package runs is the control plane's side of a run's life: it admits a run within the tightest
// of its owner's license and its agents' limits (and the caps on concurrent runs and on the VUs
// aimed at one address), splits it into shards that the fleet hands to the agents, merges the
// seconds their shards report into the run's, follows it live, judges its aborting thresholds,
// reaps what can no longer be expected (a silent agent's shard, an unclaimed one, a passed
// deadline), and ends it with its summary once every shard has; then it compares, reports and
// fits a sweep from what it kept. Another user's run is not found.
//
// Runs use the fleet (to choose agents, and as its Finalizer once a run's last shard ends) and
// the tests (to generate a test's script before its run); neither uses runs.
package runs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control/fleet"
	"github.com/barrage-load/barrage/internal/control/plugins"
	"github.com/barrage-load/barrage/internal/control/secrets"
	"github.com/barrage-load/barrage/internal/control/targets"
	"github.com/barrage-load/barrage/internal/control/tests"
	"github.com/barrage-load/barrage/internal/postgres"
	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/internal/summary"
)

// Store is what runs keep in PostgreSQL (*postgres.Store).
type Store interface {
	CreateRun(ctx context.Context, r barrage.Run, facts []byte, idem *barrage.Idempotency, checks postgres.RunChecks) (barrage.Run, bool, error)
	RunByIdempotencyKey(ctx context.Context, ownerID uuid.UUID, idem barrage.Idempotency) (barrage.Run, error)
	ActiveRuns(ctx context.Context, ownerID uuid.UUID) (int, error)

	Run(ctx context.Context, projects []uuid.UUID, id uuid.UUID) (barrage.Run, error)
	Runs(ctx context.Context, projects []uuid.UUID, f barrage.RunFilter, before *uuid.UUID, limit int) ([]barrage.Run, error)
	RunForAgent(ctx context.Context, id uuid.UUID) (barrage.Run, error)
	OpenRuns(ctx context.Context) ([]barrage.Run, error)
	Script(ctx context.Context, projects []uuid.UUID, id uuid.UUID) (barrage.Script, error)
	barrage.ProjectFinder

	StopRun(ctx context.Context, id uuid.UUID, state barrage.RunState, reason string) (bool, error)
	LoseSilentShards(ctx context.Context, before time.Time, reason string) ([]uuid.UUID, error)
	EndPendingShards(ctx context.Context, runID uuid.UUID, state barrage.ShardState, reason string) error
	EndOpenShards(ctx context.Context, runID uuid.UUID, state barrage.ShardState, reason string) error
	EndRun(ctx context.Context, id uuid.UUID, state barrage.RunState, reason string, summary []byte) (bool, error)

	RunSeconds(ctx context.Context, runID uuid.UUID, from, to int64) ([]barrage.ShardSecond, error)
	NewRunSeconds(ctx context.Context, runID uuid.UUID, from int64, seen map[uuid.UUID]int64) ([]barrage.ShardSecond, error)
	ShardAccounts(ctx context.Context, runID uuid.UUID) ([]barrage.ShardAccount, error)
	RunSummary(ctx context.Context, projects []uuid.UUID, id uuid.UUID) ([]byte, error)
	RunFacts(ctx context.Context, id uuid.UUID) ([]byte, error)
	SaveRunFacts(ctx context.Context, id uuid.UUID, facts []byte) error

	SetTestBaseline(ctx context.Context, projects []uuid.UUID, id uuid.UUID, b *barrage.TestBaseline) (barrage.Test, error)
	TestBaselineOf(ctx context.Context, id uuid.UUID) (*barrage.TestBaseline, error)
	TestTrend(ctx context.Context, projects []uuid.UUID, id uuid.UUID, limit int) ([]barrage.TrendRun, error)
}

// Config tunes runs; zero fields take the defaults.
type Config struct {
	// LostAfter is how long a running shard's agent may stay silent before the shard is lost
	// (default 8s: agents report every second, and the housekeeping that notices runs every
	// two, so a lost agent is known within 10 seconds).
	LostAfter time.Duration
	// Unclaimed is how long a shard may wait for its agent before the run fails (default 1m).
	Unclaimed time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Deps are the services runs work with.
type Deps struct {
	Fleet   *fleet.Service
	Tests   *tests.Service
	Plugins *plugins.Service
	Secrets *secrets.Service
	Targets *targets.Service
	// Changes wakes the followers of a run when it changes on any replica (ChannelRuns, by its
	// id).
	Changes fleet.Waker
}

// Service is runs.
type Service struct {
	store Store
	log   *slog.Logger
	cfg   Config
	deps  Deps
	// started is when this replica started: it gives agents LostAfter to report to it before it
	// calls any of them lost, since their silence may have been the server's own absence.
	started time.Time
	judges  *judges
}

// New returns runs on store.
func New(store Store, log *slog.Logger, cfg Config, deps Deps) *Service {
	if cfg.LostAfter <= 0 {
		cfg.LostAfter = 8 * time.Second
	}
	if cfg.Unclaimed <= 0 {
		cfg.Unclaimed = time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{store: store, log: log, cfg: cfg, deps: deps, started: cfg.Now(), judges: newJudges()}
}

func (s *Service) now() time.Time { return s.cfg.Now() }

// RunInput is what a user asks for when starting a run.
type RunInput struct {
	// ScriptID is the script to run; with TestID instead, the test's revision TestRevision
	// (0: its latest) is generated into a script first.
	ScriptID     uuid.UUID
	TestID       *uuid.UUID
	TestRevision int `json:",omitempty"` // left out of an idempotency digest when 0, as before it was asked for
	Load         barrage.LoadOverrides
	// AgentIDs are the agents to run on; without them, Agents of the online agents the user
	// may use are picked (1 when 0), the user's own first.
	AgentIDs       []uuid.UUID
	Agents         int
	IdempotencyKey *string
	// Env are values of the script's environment variables for this run, by the name the
	// script reads each from.
	Env map[string]string `json:",omitempty"` // left out of an idempotency digest when empty, as before it was asked for
}

// CreateRun admits a run of a script (or a test) of a project where p is a runner, on agents of
// the project or shared ones, and queues its shards. The run must fit the tightest of p's
// license (whatever the project: a run counts against whoever starts it) and every chosen
// agent's limits, and p's concurrent-run cap; else the error is a *barrage.LimitError naming
// each limit, what is allowed and what was asked. A repeated idempotency key returns the run it
// created first.
func (s *Service) CreateRun(ctx context.Context, p barrage.Principal, in RunInput) (barrage.Run, error) {
	idem, err := in.idempotency()
	if err != nil {
		return barrage.Run{}, err
	}
	if idem != nil {
		if prev, err := s.store.RunByIdempotencyKey(ctx, p.User.ID, *idem); err == nil || !errors.Is(err, barrage.ErrNotFound) {
			return prev, err
		}
	}
	if err := in.Load.Validate(); err != nil {
		return barrage.Run{}, err
	}
	if in.Load.Sweep != nil && (in.Agents > 1 || len(in.AgentIDs) > 1) {
		// Its levels follow one another, each measured whole: one generator runs them all.
		return barrage.Run{}, barrage.Invalid("agents", "a sweep runs on one agent")
	}
	if in.TestID != nil {
		// Admit the test's own load first: a run its owner may not start must not cost an
		// agent a generation. The revision admitted is the one generated; the generated
		// script is admitted again below, as source plugins may change the load.
		rev, err := s.deps.Tests.Load(ctx, p, *in.TestID, in.TestRevision, barrage.ProjectRunner)
		if err != nil {
			return barrage.Run{}, err
		}
		if err := script.CheckRunEnv(rev.Script, in.Env); err != nil {
			return barrage.Run{}, err
		}
		adm, err := s.admit(ctx, p, rev.Bundle.ProjectID, rev.Script, in)
		if err != nil {
			return barrage.Run{}, err
		}
		gen, err := s.deps.Tests.Generate(ctx, p, rev, &adm.agents[0].ID)
		if err != nil {
			return barrage.Run{}, err
		}
		in.ScriptID = gen.ID
	}
	sc, err := s.store.Script(ctx, p.Projects(barrage.ProjectRunner), in.ScriptID)
	if err != nil {
		return barrage.Run{}, p.Denied(ctx, err, barrage.ProjectRunner, s.store, barrage.KindScript, in.ScriptID)
	}
	parsed, err := script.Parse(sc.Source, script.ParseOptions{Filename: sc.Name})
	if err != nil {
		return barrage.Run{}, fmt.Errorf("script %s no longer parses: %w", sc.ID, err)
	}
	if err := script.CheckRunEnv(parsed, in.Env); err != nil {
		return barrage.Run{}, err
	}
	if len(in.Env) > 0 && len(parsed.Secrets) > 0 {
		// What the environment says (a base URL) may send the secrets elsewhere: whoever may
		// change it may read them, as an editor may.
		if err := p.Need(sc.ProjectID, barrage.ProjectEditor); err != nil {
			return barrage.Run{}, barrage.Errorf(barrage.ErrForbidden, "the script reads the project's secrets: setting its environment (env) takes the editor role, as it may send them elsewhere")
		}
	}
	// Each secret the script reads must be the project's (their values are read again, and
	// handed over, when an agent takes a shard).
	if _, err := s.deps.Secrets.Values(ctx, sc.ProjectID, parsed.Secrets); err != nil {
		return barrage.Run{}, err
	}
	market, err := s.deps.Plugins.Admit(ctx, p, sc.Manifest.Plugins)
	if err != nil {
		return barrage.Run{}, err
	}
	// What a shared agent may load for the run is checked once (each check is a request to a
	// target), whichever attempt first chooses one.
	destinations := sync.OnceValues(func() ([]string, error) { return s.deps.Targets.Destinations(ctx, p, sc.ProjectID, parsed) })
	// Agents chosen for the run may be taken by a run created at the same moment: then they
	// are chosen again, a few times.
	for attempt := 1; ; attempt++ {
		r, created, err := s.createRun(ctx, p, sc, parsed, market, destinations, in, idem)
		if errors.Is(err, errTakenMeanwhile) {
			if attempt < 4 {
				continue
			}
			return barrage.Run{}, barrage.Invalid("agents", err.Error()+": try again")
		}
		if err != nil {
			return barrage.Run{}, err
		}
		if created {
			s.log.InfoContext(ctx, "run queued", slog.String("run_id", r.ID.String()), slog.Int("agents", len(r.Shards)))
		}
		return r, nil
	}
}

// errTakenMeanwhile: an agent the server chose for a run took another run meanwhile.
var errTakenMeanwhile = errors.New("taken by another run meanwhile")

// createRun admits a run of sc, which uses the marketplace plugins given, on agents chosen now
// and stores it, counting a run of each plugin version. destinations says what a shared agent
// may load for it.
func (s *Service) createRun(ctx context.Context, p barrage.Principal, sc barrage.Script, parsed *script.Script, market []plugins.Resolved,
	destinations func() ([]string, error), in RunInput, idem *barrage.Idempotency) (barrage.Run, bool, error) {
	adm, err := s.admit(ctx, p, sc.ProjectID, parsed, in)
	if err != nil {
		return barrage.Run{}, false, err
	}
	for i, a := range adm.agents {
		if err := plugins.CanRunOn(a, market, agentField(in, i)); err != nil {
			return barrage.Run{}, false, err
		}
	}
	agents, limits := adm.agents, adm.limits
	var dests []string
	if slices.ContainsFunc(agents, barrage.Agent.Shared) {
		if dests, err = destinations(); err != nil {
			return barrage.Run{}, false, err
		}
	}

	r := barrage.Run{
		ID: uuid.Must(uuid.NewV7()), OwnerID: p.User.ID, ProjectID: sc.ProjectID, ScriptID: sc.ID, State: barrage.RunQueued, Load: in.Load,
		Manifest: barrage.RunManifest{ScriptSHA256: hex.EncodeToString(sc.SHA256), ScriptName: sc.Name,
			TestID: sc.Manifest.TestID, TestRevision: sc.Manifest.TestRevision,
			Plugins: sc.Manifest.Plugins, Files: sc.Manifest.Files, Warnings: plugins.Deprecations(market), Env: in.Env, Secrets: parsed.Secrets},
		Limits:       barrage.Limits{MaxVUs: limits.MaxVUs, MaxRunDuration: limits.MaxRunDuration},
		Destinations: dests, VUs: adm.vus,
	}
	for i, seg := range run.Split(len(agents)) {
		r.Shards = append(r.Shards, barrage.Shard{
			ID: uuid.Must(uuid.NewV7()), AgentID: &agents[i].ID, From: int(seg.From), To: int(seg.To), Of: int(seg.Of),
		})
	}
	// Checked again where concurrent creations cannot slip past: under the owner's and the
	// agents' locks, in the transaction that stores the run.
	checks := postgres.RunChecks{Guard: func(active int, busy []uuid.UUID) error {
		if err := adm.check(active); err != nil {
			return err
		}
		return busyAgent(agents, busy, in)
	}}
	if s.deps.Targets.MaxVUsPerAddress() > 0 {
		checks.Loads = func(loads map[string]int64) error { return s.deps.Targets.CheckLoads(r, loads) }
	}
	facts, err := json.Marshal(adm.facts)
	if err != nil {
		return barrage.Run{}, false, err
	}
	return s.store.CreateRun(ctx, r, facts, idem, checks)
}

// idempotency is the run's idempotency key, if it has one, with the digest of what was asked.
func (in RunInput) idempotency() (*barrage.Idempotency, error) {
	if in.IdempotencyKey == nil {
		return nil, nil
	}
	asked := in
	asked.IdempotencyKey = nil
	b, err := json.Marshal(asked)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	return &barrage.Idempotency{Key: *in.IdempotencyKey, Request: sum[:]}, nil
}

// admission is a run admitted: its agents, the tightest of the license's and their limits, and
// the check of its load against them for a given count of the owner's runs not ended.
type admission struct {
	agents []barrage.Agent
	limits barrage.Limits
	check  func(active int) error
	// vus is the load admitted: the VUs of a closed model, the most of an open one.
	vus int
	// facts are what the script makes of the run, stored with it.
	facts summary.Facts
}

// admit chooses the agents of a run in project and checks its load against the tightest of p's
// license and their limits, and p's concurrent-run cap.
func (s *Service) admit(ctx context.Context, p barrage.Principal, project uuid.UUID, parsed *script.Script, in RunInput) (admission, error) {
	if err := run.CheckScenarioOverrides(parsed, in.Load); err != nil {
		return admission{}, barrage.Invalid("load", err.Error())
	}
	facts := summary.FactsOf(parsed, in.Load)
	w := facts.Workload
	load := barrage.Load{VUs: w.VUs, Duration: w.Duration}
	if w.Model == script.Open {
		load.VUs = w.MaxVUs
	}
	agents, err := s.chooseAgents(ctx, p, project, in, load)
	if err != nil {
		return admission{}, err
	}
	limits := barrage.Limits{}
	if l := p.User.License; l != nil {
		limits = l.Limits
	}
	for _, a := range agents {
		limits = limits.Tightest(a.Limits)
	}
	adm := admission{agents: agents, limits: limits, vus: load.VUs, facts: facts, check: func(active int) error {
		load := load
		load.ActiveRuns = active
		if l := p.User.License; l != nil {
			lic := *l
			lic.Limits = limits
			return barrage.Whose(lic.Check(s.now(), load), l, agents)
		}
		return barrage.Whose(limits.Check(load), nil, agents)
	}}
	active, err := s.store.ActiveRuns(ctx, p.User.ID)
	if err != nil {
		return admission{}, err
	}
	return adm, adm.check(active)
}

// busyAgent refuses a run on an agent that took another run meanwhile (busy lists those of its
// agents that hold a shard not yet ended), naming it as chooseAgents would have.
func busyAgent(agents []barrage.Agent, busy []uuid.UUID, in RunInput) error {
	for i, a := range agents {
		if !slices.Contains(busy, a.ID) {
			continue
		}
		if len(in.AgentIDs) > 0 {
			return agentBusy(i, a)
		}
		return fmt.Errorf("agent %q: %w", a.Name, errTakenMeanwhile)
	}
	return nil
}

// agentField names the run's i-th agent in the request: agent_ids[i] when it named them.
func agentField(in RunInput, i int) string {
	if len(in.AgentIDs) > 0 {
		return fmt.Sprintf("agent_ids[%d]", i)
	}
	return "agents"
}

// agentBusy refuses agent_ids[i], agent a, busy with another run.
func agentBusy(i int, a barrage.Agent) error {
	return barrage.Invalid(fmt.Sprintf("agent_ids[%d]", i), fmt.Sprintf("agent %q is busy with another run: wait for it, or choose another", a.Name))
}

// chooseAgents returns the agents a run in project is asked to use, each shared or of the
// project, and online. When it chooses them, it prefers agents whose own limits admit load, so
// that an agent of short runs does not refuse a long one while another could take it.
func (s *Service) chooseAgents(ctx context.Context, p barrage.Principal, project uuid.UUID, in RunInput, load barrage.Load) ([]barrage.Agent, error) {
	now := s.now()
	if len(in.AgentIDs) > 0 {
		var out []barrage.Agent
		seen := map[uuid.UUID]bool{}
		for i, id := range in.AgentIDs {
			if seen[id] {
				return nil, barrage.Invalid(fmt.Sprintf("agent_ids[%d]", i), "names an agent twice")
			}
			seen[id] = true
			a, err := s.deps.Fleet.Agent(ctx, p, id)
			if err != nil {
				return nil, err
			}
			if !a.Shared() && *a.ProjectID != project {
				return nil, barrage.Invalid(fmt.Sprintf("agent_ids[%d]", i), fmt.Sprintf("agent %q serves the runs of another project", a.Name))
			}
			switch st := a.State(now); st {
			case barrage.AgentOffline, barrage.AgentDisabled:
				return nil, barrage.Invalid(fmt.Sprintf("agent_ids[%d]", i), fmt.Sprintf("agent %q is %s", a.Name, st))
			case barrage.AgentBusy:
				return nil, agentBusy(i, a)
			}
			out = append(out, a)
		}
		return out, nil
	}
	want := max(in.Agents, 1)
	all, err := s.deps.Fleet.Agents(ctx, p, &project)
	if err != nil {
		return nil, err
	}
	var out, tooSmall []barrage.Agent
	for _, a := range all {
		if a.State(now) != barrage.AgentOnline {
			continue
		}
		if a.Limits.Check(barrage.Load{VUs: load.VUs, Duration: load.Duration}) != nil {
			tooSmall = append(tooSmall, a)
		} else if len(out) < want {
			out = append(out, a)
		}
	}
	// Else the agents whose limits are too small: admission names the limit refused.
	for _, a := range tooSmall {
		if len(out) < want {
			out = append(out, a)
		}
	}
	if len(out) < want {
		return nil, barrage.Invalid("agents", fmt.Sprintf("asked for %d idle online agents, and %d of the project's and the shared ones are: "+
			"start one (barrage agent) or wait for a busy one", want, len(out)))
	}
	return out, nil
}

// Run reads run id of one of p's projects.
func (s *Service) Run(ctx context.Context, p barrage.Principal, id uuid.UUID) (barrage.Run, error) {
	return s.store.Run(ctx, p.Projects(barrage.ProjectViewer), id)
}

// Runs lists the runs of p's projects (of f.Project alone, when given) that f admits, newest
// first.
func (s *Service) Runs(ctx context.Context, p barrage.Principal, f barrage.RunFilter, before *uuid.UUID, limit int) (barrage.Page[barrage.Run], error) {
	in, err := p.Listed(f.Project)
	if err != nil {
		return barrage.Page[barrage.Run]{}, err
	}
	rows, err := s.store.Runs(ctx, in, f, before, limit+1)
	if err != nil {
		return barrage.Page[barrage.Run]{}, err
	}
	return barrage.NewPage(rows, limit, func(r barrage.Run) uuid.UUID { return r.ID }), nil
}

// CancelRun stops run id (p a runner of its project): its agents stop their load at their next
// report, within a second or two. A run none of whose agents has started yet ends at once.
func (s *Service) CancelRun(ctx context.Context, p barrage.Principal, id uuid.UUID) (barrage.Run, error) {
	in := p.Projects(barrage.ProjectRunner)
	if _, err := s.store.Run(ctx, in, id); err != nil {
		// A run of a project p is not in is not found; of one where p only reads, forbidden.
		return barrage.Run{}, p.Denied(ctx, err, barrage.ProjectRunner, s.store, barrage.KindRun, id)
	}
	reason := "canceled by " + p.User.Email
	stopped, err := s.store.StopRun(ctx, id, barrage.RunCanceled, reason)
	if err != nil {
		return barrage.Run{}, err
	}
	if !stopped {
		return barrage.Run{}, barrage.Errorf(barrage.ErrConflict, "the run has ended or is already stopping")
	}
	if err := s.store.EndPendingShards(ctx, id, barrage.ShardState(barrage.RunCanceled), reason); err != nil {
		return barrage.Run{}, err
	}
	r, err := s.store.Run(ctx, in, id)
	if err != nil {
		return barrage.Run{}, err
	}
	if err := s.Finalize(ctx, r); err != nil {
		return barrage.Run{}, err
	}
	return s.store.Run(ctx, in, id)
}

// Summary reads the summary of run id of one of p's projects, as JSON; a run that goes on has
// none yet (a conflict).
func (s *Service) Summary(ctx context.Context, p barrage.Principal, id uuid.UUID) ([]byte, error) {
	doc, err := s.store.RunSummary(ctx, p.Projects(barrage.ProjectViewer), id)
	if err != nil {
		return nil, err
	}
	if doc == nil {
		return nil, barrage.Errorf(barrage.ErrConflict, "the run has not ended yet: its summary comes when every agent has ended")
	}
	return doc, nil
}
