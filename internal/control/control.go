// Package control composes Barrage's control plane, the server's back room between the API and
// PostgreSQL, from the services of its subpackages, each with the narrow store it declares:
//
//   - projects: what a team shares, its members, their roles and invitations;
//   - secrets: projects' secrets, sealed;
//   - plugins: the marketplace plugins a script may use, pinned, and the agents that may run them;
//   - targets: targets proved, and what a run on a shared agent may load;
//   - fleet: agents, leases, reports, pings and jobs;
//   - tests: tests, revisions, data files, scripts, debug, generation and HAR imports;
//   - runs: admission, shards, merge, live views, judgement, reaping, summaries, compare, sweeps
//     and reports;
//   - notifications: projects' channels, what a run's end tells them, and the deliveries;
//   - schedules: tests run by the clock, through runs, their refusals told through notifications.
//
// Each uses only services above it in that list: runs use the tests and the fleet, the tests use
// the fleet, and the fleet hands a run whose last shard ended to runs through an interface of
// its own (fleet.Finalizer); no subpackage imports this one. Each service's store owns its
// transactions. The server never executes a script here: agents do. Everything lives in
// PostgreSQL, so any replica may answer any agent.
package control

import (
	"context"
	"log/slog"
	"time"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control/fleet"
	"github.com/barrage-load/barrage/internal/control/notifications"
	"github.com/barrage-load/barrage/internal/control/plugins"
	"github.com/barrage-load/barrage/internal/control/projects"
	"github.com/barrage-load/barrage/internal/control/runs"
	"github.com/barrage-load/barrage/internal/control/schedules"
	"github.com/barrage-load/barrage/internal/control/secrets"
	"github.com/barrage-load/barrage/internal/control/targets"
	"github.com/barrage-load/barrage/internal/control/tests"
	"github.com/barrage-load/barrage/internal/postgres"
	"github.com/barrage-load/barrage/internal/seal"
)

// The store of every service is PostgreSQL's.
var (
	_ projects.Store      = (*postgres.Store)(nil)
	_ secrets.Store       = (*postgres.Store)(nil)
	_ plugins.Store       = (*postgres.Store)(nil)
	_ targets.Store       = (*postgres.Store)(nil)
	_ fleet.Store         = (*postgres.Store)(nil)
	_ tests.Store         = (*postgres.Store)(nil)
	_ runs.Store          = (*postgres.Store)(nil)
	_ notifications.Store = (*postgres.Store)(nil)
	_ schedules.Store     = (*postgres.Store)(nil)
)

// Config tunes the control plane; zero fields take the defaults.
type Config struct {
	// StartLead is how far ahead of the first lease a run's shared start lies, so that all of its
	// agents lease their shards before it (default 2s).
	StartLead time.Duration
	// LostAfter is how long a running shard's agent may stay silent before the shard is lost
	// (default 8s).
	LostAfter time.Duration
	// Unclaimed is how long a shard may wait for its agent before the run fails (default 1m).
	Unclaimed time.Duration
	// PollEvery is how often a waiting lease, ping or job looks for what another replica did
	// (default 500ms); work queued by this replica wakes it at once.
	PollEvery time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Targets bound what runs on shared agents may load (its Quotas and Now are the plane's).
	Targets targets.Config
	// IngestLag, when set, receives how long after the end of the newest second of a report
	// (on the run's schedule) the report reached the server.
	IngestLag func(time.Duration)
	// Secrets seals users' secrets; nil seals with a key of this process alone (tests).
	Secrets *seal.Ring
	// Quotas bound what each user with a license keeps (none when zero).
	Quotas barrage.Quotas
	// ConversionBudget is the server time one user's recordings may take to convert
	// (tests.DefaultConversionBudget when zero).
	ConversionBudget barrage.Rate
	// Notify tunes notifications (its Now is the plane's).
	Notify notifications.Config
	// Schedules tune schedules (its Now is the plane's).
	Schedules schedules.Config
}

// Plane is the control plane's services, composed.
type Plane struct {
	Projects  *projects.Service
	Secrets   *secrets.Service
	Plugins   *plugins.Service
	Targets   *targets.Service
	Fleet     *fleet.Service
	Tests     *tests.Service
	Runs      *runs.Service
	Notify    *notifications.Service
	Schedules *schedules.Service

	// changes wakes the followers of a run, and the askers of pings and jobs, when it changes;
	// work wakes the lease requests of an agent when work is queued for it. Both carry
	// PostgreSQL notifications, so a change made on any replica wakes the waiters on every one.
	changes, work *postgres.Listener
}

// New composes the control plane on store.
func New(store *postgres.Store, log *slog.Logger, cfg Config) *Plane {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Secrets == nil {
		cfg.Secrets = seal.Ephemeral()
	}
	p := &Plane{changes: store.NewListener(postgres.ChannelRuns, log), work: store.NewListener(postgres.ChannelWork, log)}
	p.Projects = projects.New(store, log)
	p.Secrets = secrets.New(store, cfg.Secrets)
	p.Plugins = plugins.New(store)
	tc := cfg.Targets
	tc.Quotas, tc.Now = cfg.Quotas, cfg.Now
	p.Targets = targets.New(store, log, tc)
	p.Fleet = fleet.New(store, log, fleet.Config{StartLead: cfg.StartLead, PollEvery: cfg.PollEvery, Now: cfg.Now, IngestLag: cfg.IngestLag},
		fleet.Deps{Secrets: p.Secrets, Plugins: p.Plugins, Targets: p.Targets, Changes: p.changes, Work: p.work})
	p.Tests = tests.New(store, log, tests.Config{Quotas: cfg.Quotas, ConversionBudget: cfg.ConversionBudget, Now: cfg.Now},
		tests.Deps{Fleet: p.Fleet, Plugins: p.Plugins, Secrets: p.Secrets})
	p.Runs = runs.New(store, log, runs.Config{LostAfter: cfg.LostAfter, Unclaimed: cfg.Unclaimed, Now: cfg.Now},
		runs.Deps{Fleet: p.Fleet, Tests: p.Tests, Plugins: p.Plugins, Secrets: p.Secrets, Targets: p.Targets, Changes: p.changes})
	p.Fleet.UseFinalizer(p.Runs)
	nc := cfg.Notify
	nc.Now = cfg.Now
	p.Notify = notifications.New(store, cfg.Secrets, log.With(slog.String("service", "notifications")), nc)
	sc := cfg.Schedules
	sc.Now = cfg.Now
	p.Schedules = schedules.New(store, log.With(slog.String("service", "schedules")), sc,
		schedules.Deps{Runs: p.Runs, Tests: p.Tests, Notify: p.Notify})
	return p
}

// Listen follows the notifications of other replicas until ctx ends (runs that change, work
// queued for agents), so that waiting requests wake at once. Every replica runs it.
func (p *Plane) Listen(ctx context.Context) {
	go p.changes.Run(ctx)
	p.work.Run(ctx)
}
