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
	// RunEnded tells the channels that want it what a run's end makes (once per run, queued
	// with the end); nil tells nothing.
	RunEnded func(ctx context.Context, run uuid.UUID) error
	// Deliver makes an attempt of a notification's delivery; last says it is the last attempt.
	// An error has it tried again after DeliverBackoff, doubled at each attempt.
	Deliver func(ctx context.Context, delivery uuid.UUID, last bool) error
	// Tick fires the schedules that are due (every TickEvery, on one replica at a time); Fire
	// starts the run of one firing, queued by the tick.
	Tick func(ctx context.Context) error
	Fire func(ctx context.Context, schedule uuid.UUID, dueAt time.Time) error
	// DeliverAttempts bounds a delivery's attempts (default 8); DeliverBackoff is the wait
	// before the second (default 30s), doubled before each next, an hour at most.
	DeliverAttempts int
	DeliverBackoff  time.Duration
}

// TickEvery is how often the schedules that are due are fired: a firing starts its run within
// a few seconds of its time.
const TickEvery = 2 * time.Second

// ReapEvery is how often the control plane's housekeeping runs: with agents lost after 8 seconds
// of silence, a lost agent is noticed within 10.
const ReapEvery = 2 * time.Second

// Runner is the River client with Barrage's workers and periodic jobs.
type Runner struct {
	client          *river.Client[pgx.Tx]
	deliverAttempts int
}

// JobTimeout is the longest a job runs (River's default, said here beside RescueAfter).
const JobTimeout = time.Minute

// RescueAfter is how long a job may stay running before it is taken to be held by a replica that
// died, and is tried again: past JobTimeout with room for a worker to see it cut. River looks for
// such jobs every 30 seconds, so a firing of a schedule held by a replica that died is taken
// again within two minutes of its time, before it would count as missed.
const RescueAfter = 80 * time.Second

// New returns a runner on pool; Start makes it work.
func New(pool *pgxpool.Pool, log *slog.Logger, w Work) (*Runner, error) {
	workers := river.NewWorkers()
	river.AddWorker(workers, &cleanUpWorker{do: w.CleanUp})
	river.AddWorker(workers, &reapWorker{do: w.Reap})
	river.AddWorker(workers, &finalizeWorker{do: w.Finalize})
	if w.DeliverAttempts <= 0 {
		w.DeliverAttempts = 8
	}
	if w.DeliverBackoff <= 0 {
		w.DeliverBackoff = 30 * time.Second
	}
	if w.RunEnded != nil {
		river.AddWorker(workers, &runEndedWorker{do: w.RunEnded})
	}
	if w.Deliver != nil {
		river.AddWorker(workers, &deliverWorker{do: w.Deliver, backoff: w.DeliverBackoff})
	}
	periodic := []*river.PeriodicJob{
		river.NewPeriodicJob(river.PeriodicInterval(time.Hour), func() (river.JobArgs, *river.InsertOpts) {
			return CleanUpArgs{}, nil
		}, &river.PeriodicJobOpts{ID: "cleanup", RunOnStart: true}),
		river.NewPeriodicJob(river.PeriodicInterval(ReapEvery), func() (river.JobArgs, *river.InsertOpts) {
			// Never two at once: a slow reap is not joined by the next.
			return ReapArgs{}, &river.InsertOpts{MaxAttempts: 1, UniqueOpts: river.UniqueOpts{ByPeriod: ReapEvery}}
		}, &river.PeriodicJobOpts{ID: "reap", RunOnStart: true}),
	}
	if w.Tick != nil {
		river.AddWorker(workers, &tickWorker{do: w.Tick})
		periodic = append(periodic, river.NewPeriodicJob(river.PeriodicInterval(TickEvery), func() (river.JobArgs, *river.InsertOpts) {
			return TickArgs{}, &river.InsertOpts{MaxAttempts: 1, UniqueOpts: river.UniqueOpts{ByPeriod: TickEvery}}
		}, &river.PeriodicJobOpts{ID: "schedules", RunOnStart: true}))
	}
	if w.Fire != nil {
		river.AddWorker(workers, &fireWorker{do: w.Fire})
	}
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		// River tells of its producers every few seconds at info: warnings and errors only.
		Logger:       logging.AtLeast(log.With(slog.String("component", "jobs")), slog.LevelWarn),
		Queues:       map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 10}},
		Workers:      workers,
		PeriodicJobs: periodic,
		// The reap job runs every two seconds: keep its rows an hour, not River's default day.
		CompletedJobRetentionPeriod: time.Hour,
		FetchPollInterval:           200 * time.Millisecond,
		// A job held by a replica that died (killed, its machine gone) stays running in the
		// table until River rescues it: an hour by default, which would deliver a run's
		// notification an hour late and record a schedule's firing as missed. A job is cut
		// after JobTimeout wherever it runs, so one running past RescueAfter has no live
		// worker left: it is taken again then.
		JobTimeout:           JobTimeout,
		RescueStuckJobsAfter: RescueAfter,
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	return &Runner{client: client, deliverAttempts: w.DeliverAttempts}, nil
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

// RunEnded queues, in tx, what run's end tells the channels that want it: once tx commits, once
// per run.
func (r *Runner) RunEnded(ctx context.Context, tx pgx.Tx, run uuid.UUID) error {
	_, err := r.client.InsertTx(ctx, tx, RunEndedArgs{Run: run}, &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}})
	return err
}

// Deliver queues, in tx, an attempt of each delivery, tried again with backoff until one
// delivers or DeliverAttempts ran.
func (r *Runner) Deliver(ctx context.Context, tx pgx.Tx, deliveries []uuid.UUID) error {
	params := make([]river.InsertManyParams, len(deliveries))
	for i, id := range deliveries {
		params[i] = river.InsertManyParams{Args: DeliverArgs{Delivery: id}, InsertOpts: &river.InsertOpts{MaxAttempts: r.deliverAttempts}}
	}
	_, err := r.client.InsertManyTx(ctx, tx, params)
	return err
}

// Fire queues, in tx, the run of schedule's firing due at dueAt: once per firing.
func (r *Runner) Fire(ctx context.Context, tx pgx.Tx, schedule uuid.UUID, dueAt time.Time) error {
	_, err := r.client.InsertTx(ctx, tx, FireArgs{Schedule: schedule, DueAt: dueAt}, &river.InsertOpts{
		MaxAttempts: 5, UniqueOpts: river.UniqueOpts{ByArgs: true}})
	return err
}

// TickArgs fires the schedules that are due.
type TickArgs struct{}

// Kind names the job.
func (TickArgs) Kind() string { return "schedules.tick" }

// FireArgs starts the run of a schedule's firing.
type FireArgs struct {
	Schedule uuid.UUID `json:"schedule"`
	DueAt    time.Time `json:"due_at"`
}

// Kind names the job.
func (FireArgs) Kind() string { return "schedule.fire" }

type tickWorker struct {
	river.WorkerDefaults[TickArgs]
	do func(context.Context) error
}

func (w *tickWorker) Work(ctx context.Context, _ *river.Job[TickArgs]) error { return w.do(ctx) }

type fireWorker struct {
	river.WorkerDefaults[FireArgs]
	do func(context.Context, uuid.UUID, time.Time) error
}

func (w *fireWorker) Work(ctx context.Context, job *river.Job[FireArgs]) error {
	return w.do(ctx, job.Args.Schedule, job.Args.DueAt)
}

// RunEndedArgs tells what a run's end makes.
type RunEndedArgs struct {
	Run uuid.UUID `json:"run"`
}

// Kind names the job.
func (RunEndedArgs) Kind() string { return "notify.run_ended" }

// DeliverArgs delivers a notification.
type DeliverArgs struct {
	Delivery uuid.UUID `json:"delivery"`
}

// Kind names the job.
func (DeliverArgs) Kind() string { return "notify.deliver" }

type runEndedWorker struct {
	river.WorkerDefaults[RunEndedArgs]
	do func(context.Context, uuid.UUID) error
}

func (w *runEndedWorker) Work(ctx context.Context, job *river.Job[RunEndedArgs]) error {
	return w.do(ctx, job.Args.Run)
}

type deliverWorker struct {
	river.WorkerDefaults[DeliverArgs]
	do      func(context.Context, uuid.UUID, bool) error
	backoff time.Duration
}

func (w *deliverWorker) Work(ctx context.Context, job *river.Job[DeliverArgs]) error {
	return w.do(ctx, job.Args.Delivery, job.Attempt >= job.MaxAttempts)
}

// NextRetry waits the backoff, doubled at each attempt, an hour at most.
func (w *deliverWorker) NextRetry(job *river.Job[DeliverArgs]) time.Time {
	return time.Now().Add(Backoff(w.backoff, job.Attempt))
}

// Backoff is the wait after attempt (from 1) of a delivery whose first retry waits base.
func Backoff(base time.Duration, attempt int) time.Duration {
	return min(base<<min(max(attempt-1, 0), 20), time.Hour)
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
