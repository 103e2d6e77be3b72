// Package fleet is the control plane's side of the measuring agents: it registers them and
// authenticates their tokens, hands each agent its work when it asks (a shard of a run under a
// lease with a fencing token, pings to answer, jobs to do: a debug, a generation), takes the
// seconds of metrics an agent reports of its shard (a resent second is stored once, a stale
// lease is refused), and tells it when to stop.
//
// The fleet knows runs only as the shards it hands out: when a report ends a run's last shard,
// it hands the run to its Finalizer (package runs), which it does not import.
package fleet

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control/plugins"
	"github.com/barrage-load/barrage/internal/control/secrets"
	"github.com/barrage-load/barrage/internal/control/targets"
	"github.com/barrage-load/barrage/internal/postgres"
)

// Store is what the fleet keeps in PostgreSQL (*postgres.Store).
type Store interface {
	CreateAgent(ctx context.Context, a barrage.Agent, tokenHash []byte) (barrage.Agent, error)
	UsableAgents(ctx context.Context, projects []uuid.UUID) ([]barrage.Agent, error)
	UsableAgent(ctx context.Context, projects []uuid.UUID, id uuid.UUID) (barrage.Agent, error)
	AllAgents(ctx context.Context) ([]barrage.Agent, error)
	DeleteAgent(ctx context.Context, id uuid.UUID, projects []uuid.UUID) error
	barrage.ProjectFinder
	AgentByTokenHash(ctx context.Context, hash []byte) (barrage.Agent, error)
	AgentSeen(ctx context.Context, id uuid.UUID, version string, cores int, ip string, sandbox bool, protocol int) error

	LeaseShard(ctx context.Context, agentID uuid.UUID, version string, lead time.Duration) (*barrage.ShardJob, error)
	AgentWorkWaiting(ctx context.Context, agentID uuid.UUID, jobsSince time.Time) (bool, error)
	ReportShard(ctx context.Context, agentID, shardID uuid.UUID, lease int64, secs []barrage.ShardSecond, end *barrage.ShardEnd, jobsSince time.Time) (postgres.ShardReport, error)

	CreatePing(ctx context.Context, id, agentID uuid.UUID) error
	TakePings(ctx context.Context, agentID uuid.UUID) ([]uuid.UUID, error)
	AnswerPing(ctx context.Context, agentID, id uuid.UUID) error
	PingRoundTrip(ctx context.Context, id uuid.UUID) (rtt time.Duration, ok bool, err error)

	CreateAgentJob(ctx context.Context, j barrage.AgentJob, maxOpen int, since time.Time) error
	TakeAgentJobs(ctx context.Context, agentID uuid.UUID, since time.Time, slots postgres.JobSlots, files postgres.DataFiles) ([]barrage.AgentJob, error)
	AnswerAgentJob(ctx context.Context, agentID, id uuid.UUID, result []byte, errText *string) error
	AgentJob(ctx context.Context, id uuid.UUID) (barrage.AgentJob, error)
}

// Config tunes the fleet; zero fields take the defaults.
type Config struct {
	// StartLead is how far ahead of the first lease a run's shared start lies, so that all of its
	// agents lease their shards before it (default 2s).
	StartLead time.Duration
	// PollEvery is how often a waiting lease, ping or job looks for what another replica did
	// (default 500ms); what this replica's notifications say wakes it at once.
	PollEvery time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// IngestLag, when set, receives how long after the end of the newest second of a report
	// (on the run's schedule) the report reached the server.
	IngestLag func(time.Duration)
}

// Waker wakes the waiters on a key when it is notified on any replica (a *postgres.Listener).
type Waker interface {
	Subscribe(key string) (<-chan struct{}, func())
}

// Deps are the services and notifications the fleet works with.
type Deps struct {
	Secrets *secrets.Service
	Plugins *plugins.Service
	Targets *targets.Service
	// Changes wakes the asker of a ping or a job when it is answered (ChannelRuns, by its id);
	// Work wakes an agent's lease requests when work is queued for it (ChannelWork, by its id).
	Changes, Work Waker
}

// Finalizer ends a run whose shards have all ended: its state and its summary (package runs).
// It does nothing while a shard goes on or once the run has ended.
type Finalizer interface {
	Finalize(ctx context.Context, r barrage.Run) error
}

// Service is the fleet.
type Service struct {
	store Store
	log   *slog.Logger
	cfg   Config
	deps  Deps
	// finalizer ends a run once its last shard has, unless the store queued its summary.
	finalizer Finalizer
}

// New returns the fleet on store.
func New(store Store, log *slog.Logger, cfg Config, deps Deps) *Service {
	if cfg.StartLead <= 0 {
		cfg.StartLead = 2 * time.Second
	}
	if cfg.PollEvery <= 0 {
		cfg.PollEvery = 500 * time.Millisecond
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{store: store, log: log, cfg: cfg, deps: deps}
}

// UseFinalizer has f end the runs whose last shard a report ends, when the store did not queue
// their summary (postgres.Store.UseFinalizer). Set it before serving.
func (s *Service) UseFinalizer(f Finalizer) { s.finalizer = f }

func (s *Service) now() time.Time { return s.cfg.Now() }
