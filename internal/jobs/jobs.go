// Package jobs runs Barrage's background work as River jobs on the server's PostgreSQL, so that
// several `serve` replicas share it (each job is worked once, by whichever replica takes it) and
// nothing is lost when one dies (a job a dead replica held is worked again). It knows the kinds of
// work and when they run; what each does belongs to the package that owns it, handed in as Work.
package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/barrage-load/barrage/internal/logging"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// Work is what the jobs do, from the packages that own it.
type Work struct {
	// CleanUp deletes expired rate-limit windows, refresh tokens and the like (hourly).
	CleanUp func(ctx context.Context) error
	// Reap is the control plane's housekeeping: lost agents, unclaimed shards, deadlines,
	// aborting thresholds (every ReapEvery).
	Reap func(ctx context.Context) error
	// Finalize summarizes a run whose shards have all ended, and ends it.
	Finalize func(ctx context.Context, run uuid.UUID) error
}

// ReapEvery is how often the control plane's housekeeping runs: with agents lost after 8 seconds
// of silence, a lost agent is noticed within 10.
const ReapEvery = 2 * time.Second

// Runner is the River client with Barrage's workers and periodic jobs.
type Runner struct {
	client *river.Client[pgx.Tx]
}

// New returns a runner on pool; Start makes it work.
func New(pool *pgxpool.Pool, log *slog.Logger, w Work) (*Runner, error) {
	workers := river.NewWorkers()
	river.AddWorker(workers, &cleanUpWorker{do: w.CleanUp})
	river.AddWorker(workers, &reapWorker{do: w.Reap})
	river.AddWorker(workers, &finalizeWorker{do: w.Finalize})
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		// River tells of its producers every few seconds at info: warnings and errors only.
		Logger:  logging.AtLeast(log.With(slog.String("component", "jobs")), slog.LevelWarn),
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 10}},
		Workers: workers,
		PeriodicJobs: []*river.PeriodicJob{
			river.NewPeriodicJob(river.PeriodicInterval(time.Hour), func() (river.JobArgs, *river.InsertOpts) {
				return CleanUpArgs{}, nil
			}, &river.PeriodicJobOpts{ID: "cleanup", RunOnStart: true}),
			river.NewPeriodicJob(river.PeriodicInterval(ReapEvery), func() (river.JobArgs, *river.InsertOpts) {
				// Never two at once: a slow reap is not joined by the next.
				return ReapArgs{}, &river.InsertOpts{MaxAttempts: 1, UniqueOpts: river.UniqueOpts{ByPeriod: ReapEvery}}
			}, &river.PeriodicJobOpts{ID: "reap", RunOnStart: true}),
		},
		// The reap job runs every two seconds: keep its rows an hour, not River's default day.
		CompletedJobRetentionPeriod: time.Hour,
		FetchPollInterval:           200 * time.Millisecond,
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	return &Runner{client: client}, nil
}

// Start works jobs until Stop.
func (r *Runner) Start(ctx context.Context) error { return r.client.Start(ctx) }

// Stop finishes the jobs under way and stops.
func (r *Runner) Stop(ctx context.Context) error { return r.client.Stop(ctx) }

// Finalize queues the summary of a run whose shards have all ended, in tx: it happens once tx
// commits, on whichever replica takes it, and again if that replica dies first. One per run.
func (r *Runner) Finalize(ctx context.Context, tx pgx.Tx, run uuid.UUID) error {
	_, err := r.client.InsertTx(ctx, tx, FinalizeArgs{Run: run}, &river.InsertOpts{
		UniqueOpts: river.UniqueOpts{ByArgs: true},
	})
	return err
}

// CleanUpArgs is the hourly clean-up.
type CleanUpArgs struct{}

// Kind names the job.
func (CleanUpArgs) Kind() string { return "cleanup" }

// ReapArgs is the control plane's housekeeping.
type ReapArgs struct{}

// Kind names the job.
func (ReapArgs) Kind() string { return "reap" }

// FinalizeArgs summarizes and ends a run.
type FinalizeArgs struct {
	Run uuid.UUID `json:"run"`
}

// Kind names the job.
func (FinalizeArgs) Kind() string { return "run.finalize" }

type cleanUpWorker struct {
	river.WorkerDefaults[CleanUpArgs]
	do func(context.Context) error
}

func (w *cleanUpWorker) Work(ctx context.Context, _ *river.Job[CleanUpArgs]) error { return w.do(ctx) }

type reapWorker struct {
	river.WorkerDefaults[ReapArgs]
	do func(context.Context) error
}

func (w *reapWorker) Work(ctx context.Context, _ *river.Job[ReapArgs]) error { return w.do(ctx) }

// Timeout bounds a reap well under its period.
func (w *reapWorker) Timeout(*river.Job[ReapArgs]) time.Duration { return 30 * time.Second }

type finalizeWorker struct {
	river.WorkerDefaults[FinalizeArgs]
	do func(context.Context, uuid.UUID) error
}

func (w *finalizeWorker) Work(ctx context.Context, job *river.Job[FinalizeArgs]) error {
	return w.do(ctx, job.Args.Run)
}
