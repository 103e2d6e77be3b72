package jobs_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/jobs"
	"github.com/barrage-load/barrage/internal/pgtest"
)

func TestJobsRunOnTheirScheduleAndWithTheirTransaction(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	cleaned := make(chan struct{}, 10)
	reaped := make(chan struct{}, 100)
	finalized := make(chan uuid.UUID, 10)
	r, err := jobs.New(pool, slog.New(slog.DiscardHandler), jobs.Work{
		CleanUp:  func(context.Context) error { cleaned <- struct{}{}; return nil },
		Reap:     func(context.Context) error { reaped <- struct{}{}; return nil },
		Finalize: func(_ context.Context, run uuid.UUID) error { finalized <- run; return nil },
	})
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, r.Start(ctx))
	t.Cleanup(func() { _ = r.Stop(context.WithoutCancel(ctx)) })

	// The clean-up runs at start (then hourly); the housekeeping again and again.
	<-cleaned
	<-reaped
	<-reaped

	// A summary queued in a transaction that rolls back is never made; one that commits is made
	// once, however often it was queued.
	lost, kept := uuid.New(), uuid.New()
	rollback := errors.New("roll back")
	require.ErrorIs(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		require.NoError(t, r.Finalize(ctx, tx, lost))
		return rollback
	}), rollback)
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		require.NoError(t, r.Finalize(ctx, tx, kept))
		return r.Finalize(ctx, tx, kept)
	}))
	require.Equal(t, kept, <-finalized)
	// Nothing else comes: the next housekeeping rounds pass without a second summary.
	for range 2 {
		<-reaped
	}
	select {
	case run := <-finalized:
		t.Fatalf("a second summary, of %s", run)
	default:
	}
	var n int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE kind = 'run.finalize'").Scan(&n))
	require.Equal(t, 1, n)
}

// A job that a replica took and never finished (the replica was killed) is taken again by
// another once it has run past RescueAfter, not an hour later: a run's notification is delivered,
// a schedule's firing made, within minutes of a replica's death.
func TestAJobHeldByADeadReplicaIsTakenAgain(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	delivered := make(chan uuid.UUID, 10)
	r, err := jobs.New(pool, slog.New(slog.DiscardHandler), jobs.Work{
		CleanUp:  func(context.Context) error { return nil },
		Reap:     func(context.Context) error { return nil },
		Finalize: func(context.Context, uuid.UUID) error { return nil },
		Deliver:  func(_ context.Context, id uuid.UUID, _ bool) error { delivered <- id; return nil },
	})
	require.NoError(t, err)
	ctx := t.Context()
	id := uuid.New()
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return r.Deliver(ctx, tx, []uuid.UUID{id}) }))
	// As the dead replica left it: taken, its attempt begun longer ago than RescueAfter.
	tag, err := pool.Exec(ctx, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now() - $1::interval,
		attempted_by = ARRAY['a replica that was killed'] WHERE kind = 'notify.deliver'`, (jobs.RescueAfter + time.Second).String())
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())

	require.NoError(t, r.Start(ctx))
	t.Cleanup(func() { _ = r.Stop(context.WithoutCancel(ctx)) })
	select {
	case got := <-delivered:
		require.Equal(t, id, got)
	case <-time.After(2 * time.Minute): // River looks for such jobs every 30 s
		t.Fatal("the job of the dead replica was not taken again")
	}
	var attempt int
	require.NoError(t, pool.QueryRow(ctx, "SELECT attempt FROM river_job WHERE kind = 'notify.deliver'").Scan(&attempt))
	require.Equal(t, 2, attempt, "its second attempt")
}
