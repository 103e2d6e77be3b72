// Package control is Barrage's control plane: the measuring agents that users may run on, and
// the runs it places on them. It admits a run within the tightest of the license's and the
// agents' limits, splits it into shards, hands each shard to its agent under a lease with a
// fencing token, takes the seconds of metrics the agents report, notices agents that went
// silent, and turns the merged seconds into the run's summary.
//
// The server never executes a script here: agents do. Everything lives in PostgreSQL, so any
// replica of the server may answer any agent.
package control

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/barrage-load/barrage/internal/auth"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/ownership"
	"github.com/barrage-load/barrage/internal/postgres"
	"github.com/barrage-load/barrage/internal/seal"
)

// Config tunes the control plane; zero fields take the defaults.
type Config struct {
	// StartLead is how far ahead of the first lease a run's shared start lies, so that all of its
	// agents lease their shards before it (default 2s).
	StartLead time.Duration
	// LostAfter is how long a running shard's agent may stay silent before the shard is lost
	// (default 8s: agents report every second, and the housekeeping that notices runs every
	// two, so a lost agent is known within 10 seconds).
	LostAfter time.Duration
	// Unclaimed is how long a shard may wait for its agent before the run fails (default 1m).
	Unclaimed time.Duration
	// PollEvery is how often a waiting lease looks for work that another replica queued
	// (default 500ms); work queued by this replica wakes it at once.
	PollEvery time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Targets bound what runs on shared agents may load.
	Targets TargetsConfig
	// IngestLag, when set, receives how long after the end of the newest second of a report
	// (on the run's schedule) the report reached the server.
	IngestLag func(time.Duration)
	// Secrets seals users' secrets; nil seals with a key of this process alone (tests).
	Secrets *seal.Ring
	// Quotas bound what each user with a license keeps (none when zero).
	Quotas barrage.Quotas
	// ConversionBudget is the server time one user's recordings may take to convert, in seconds
	// (N seconds, refilled over Per): DefaultConversionBudget when zero.
	ConversionBudget barrage.Rate
}

// DefaultConversionBudget lets a user's conversions take 60 seconds of the server's time, and
// 60 more each 10 minutes: a HAR takes about a second, so dozens in a row, then one every ten
// seconds, and another user's requests keep their cores.
var DefaultConversionBudget = barrage.Rate{N: 60, Per: 10 * time.Minute}

// Service is the control plane.
type Service struct {
	store *postgres.Store
	log   *slog.Logger
	now   func() time.Time
	// started is when this replica started: it gives agents LostAfter to report to it before it
	// calls any of them lost, since their silence may have been the server's own absence.
	started time.Time
	cfg     Config
	// runs wakes the followers of a run when it changes; work wakes the lease requests of an
	// agent when work is queued for it. Both carry PostgreSQL notifications, so a change made
	// on any replica wakes the waiters on every one.
	runs, work *postgres.Listener
	judges     *judges
	checker    *ownership.Checker
	finalizer  Finalizer // nil: summaries are made at once
	secrets    *seal.Ring
}

// New returns the control plane on store.
func New(store *postgres.Store, log *slog.Logger, cfg Config) *Service {
	if cfg.StartLead <= 0 {
		cfg.StartLead = 2 * time.Second
	}
	if cfg.LostAfter <= 0 {
		cfg.LostAfter = 8 * time.Second
	}
	if cfg.Unclaimed <= 0 {
		cfg.Unclaimed = time.Minute
	}
	if cfg.PollEvery <= 0 {
		cfg.PollEvery = 500 * time.Millisecond
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Targets.Checker == nil {
		cfg.Targets.Checker = ownership.New(nil, nil)
	}
	if cfg.Secrets == nil {
		key := make([]byte, seal.KeySize)
		_, _ = rand.Read(key)
		cfg.Secrets, _ = seal.New(key) // a key of the right size never fails
	}
	return &Service{store: store, log: log, now: cfg.Now, started: cfg.Now(), cfg: cfg,
		runs: store.NewListener(postgres.ChannelRuns, log), work: store.NewListener(postgres.ChannelWork, log),
		judges: newJudges(), checker: cfg.Targets.Checker, secrets: cfg.Secrets}
}

// Listen follows the notifications of other replicas until ctx ends (runs that change, work
// queued for agents), so that waiting requests wake at once. Every replica runs it.
func (s *Service) Listen(ctx context.Context) {
	go s.runs.Run(ctx)
	s.work.Run(ctx)
}

// Finalizer queues a run's summary as background work, in the transaction that ended its last
// shard (package jobs, on River).
type Finalizer interface {
	Finalize(ctx context.Context, tx pgx.Tx, run uuid.UUID) error
}

// UseFinalizer hands summaries to f instead of making them in the request that ended a run's
// last shard. Set it before serving.
func (s *Service) UseFinalizer(f Finalizer) { s.finalizer = f }

// AgentInput is a new agent's name and limits.
type AgentInput struct {
	Name   string
	Limits barrage.Limits
}

// CreateAgent registers an agent and returns it with its token, shown this once. With shared,
// the agent serves every user (the caller must be an admin: the route says so); else it is p's
// own.
func (s *Service) CreateAgent(ctx context.Context, p barrage.Principal, in AgentInput, shared bool) (barrage.Agent, string, error) {
	name, err := barrage.CheckText("name", in.Name, 1, 100)
	if err != nil {
		return barrage.Agent{}, "", err
	}
	if in.Limits.MaxVUs < 0 {
		return barrage.Agent{}, "", barrage.Invalid("max_vus", "must be positive")
	}
	if in.Limits.MaxRunDuration < 0 {
		return barrage.Agent{}, "", barrage.Invalid("max_run_duration_seconds", "must be positive")
	}
	a := barrage.Agent{ID: uuid.Must(uuid.NewV7()), Name: name, Limits: in.Limits}
	if !shared {
		a.OwnerID = &p.User.ID
	}
	token := auth.NewSecret(auth.PrefixAgentToken)
	a, err = s.store.CreateAgent(ctx, a, auth.HashSecret(token))
	if err != nil {
		return barrage.Agent{}, "", err
	}
	s.log.InfoContext(ctx, "agent registered", slog.String("agent_id", a.ID.String()), slog.Bool("shared", shared))
	return a, token, nil
}

// Agents lists the agents p may run on: p's own, then the shared ones.
func (s *Service) Agents(ctx context.Context, p barrage.Principal) ([]barrage.Agent, error) {
	return s.store.UsableAgents(ctx, p.User.ID)
}

// AllAgents lists every agent, for admins.
func (s *Service) AllAgents(ctx context.Context) ([]barrage.Agent, error) {
	return s.store.AllAgents(ctx)
}

// Agent reads one agent p may run on.
func (s *Service) Agent(ctx context.Context, p barrage.Principal, id uuid.UUID) (barrage.Agent, error) {
	return s.store.UsableAgent(ctx, p.User.ID, id)
}

// DeleteAgent removes p's private agent id, or with shared a shared agent (admins).
func (s *Service) DeleteAgent(ctx context.Context, p barrage.Principal, id uuid.UUID, shared bool) error {
	var owner *uuid.UUID
	if !shared {
		owner = &p.User.ID
	}
	return s.store.DeleteAgent(ctx, id, owner)
}

var errBadAgentToken = barrage.Errorf(barrage.ErrUnauthorized, "the agent token is invalid or the agent was removed")

// AuthenticateAgent turns an agent's bearer token into the agent.
func (s *Service) AuthenticateAgent(ctx context.Context, bearer string) (barrage.Agent, error) {
	a, err := s.store.AgentByTokenHash(ctx, auth.HashSecret(bearer))
	switch {
	case err == nil && a.Disabled:
		return barrage.Agent{}, barrage.Errorf(barrage.ErrForbidden, "this agent is disabled")
	case err == nil:
		return a, nil
	case errors.Is(err, barrage.ErrNotFound):
		return barrage.Agent{}, errBadAgentToken
	}
	return barrage.Agent{}, err
}

// Quotas are the quotas on what u keeps (their license's over the server's defaults), and what u
// keeps; none for a user without a license.
func (s *Service) Quotas(ctx context.Context, u barrage.User) (barrage.Quotas, barrage.Usage, error) {
	if u.License == nil {
		return barrage.Quotas{}, barrage.Usage{}, nil
	}
	used, err := s.store.Usage(ctx, u.ID)
	return u.Quotas(s.cfg.Quotas), used, err
}

// quota is what a change by p may take what p keeps to.
func (s *Service) quota(p barrage.Principal) postgres.Quota { return postgres.QuotaOf(p, s.cfg.Quotas) }
