package schedules_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control"
	"github.com/barrage-load/barrage/internal/control/schedules"
	"github.com/barrage-load/barrage/internal/control/tests"
	"github.com/barrage-load/barrage/internal/controltest"
)

// queued records what the store queues, for the test to run by hand: the firings.
type queued struct {
	fired []firing
}

type firing struct {
	schedule uuid.UUID
	due      time.Time
}

func (q *queued) RunEnded(context.Context, pgx.Tx, uuid.UUID) error  { return nil }
func (q *queued) Deliver(context.Context, pgx.Tx, []uuid.UUID) error { return nil }
func (q *queued) Fire(_ context.Context, _ pgx.Tx, id uuid.UUID, due time.Time) error {
	q.fired = append(q.fired, firing{id, due})
	return nil
}

// A schedule whose owner's license expired records why its firing started no run, and pauses
// itself, saying why; a tick fires each due schedule once, however often it runs.
func TestAScheduleOfAnExpiredLicensePausesItself(t *testing.T) {
	ctx := context.Background()
	p := controltest.New(t, control.Config{})
	q := &queued{}
	p.Store.UseNotifier(q)
	ada := p.User("ada@example.com", &barrage.DemoLicense)
	tt, err := p.Tests.CreateTest(ctx, ada, tests.TestInput{Format: barrage.FormatYAML, Source: []byte(`version: 1
name: nightly
session:
  groups:
    - name: g
      requests:
        - { name: home, url: "http://127.0.0.1:9/" }
load: { vus: 1, duration: 1s }
`)})
	require.NoError(t, err)
	// A cron expression that names no time that comes, or carries its own zone, is refused.
	for _, c := range []struct {
		in    schedules.Input
		field string
	}{{schedules.Input{Cron: "0 0 31 2 *"}, "cron"}, {schedules.Input{Cron: "TZ=Asia/Tokyo 0 2 * * *"}, "cron"},
		{schedules.Input{Every: "9223372036854775807ns"}, "every"}, {schedules.Input{Cron: "0 2 * * *", TimeZone: "Local"}, "time_zone"},
		{schedules.Input{Every: "1h", Env: map[string]string{"A\x00": "b"}}, "env"}} {
		_, err := p.Schedules.Create(ctx, ada, tt.ID, c.in)
		controltest.Invalid(t, err, c.field)
	}

	// Fifteen days on, the demo license has expired: the tick fires the schedule due an hour
	// after it was made once.
	p.Clock.Add(15 * 24 * time.Hour)
	sc, err := p.Schedules.Create(ctx, ada, tt.ID, schedules.Input{Every: "1h"})
	require.NoError(t, err)
	require.Equal(t, p.Clock.Now().Add(time.Hour).UTC().Truncate(time.Second), sc.NextAt.UTC(), "an hour on, in whole seconds")
	p.Clock.Add(time.Hour + time.Second)
	require.NoError(t, p.Schedules.Tick(ctx))
	require.NoError(t, p.Schedules.Tick(ctx))
	require.Len(t, q.fired, 1, "one firing, however many ticks")
	require.Equal(t, sc.ID, q.fired[0].schedule)
	require.NoError(t, p.Schedules.Fire(ctx, sc.ID, q.fired[0].due))

	fs, err := p.Schedules.Firings(ctx, ada, sc.ID, 10)
	require.NoError(t, err)
	require.Len(t, fs, 1)
	require.Nil(t, fs[0].RunID)
	require.Contains(t, fs[0].Error, "valid_until")
	got, err := p.Schedules.Schedule(ctx, ada, sc.ID)
	require.NoError(t, err)
	require.NotNil(t, got.PausedAt)
	require.True(t, strings.HasPrefix(got.PausedReason, "paused: its owner's license expired"), got.PausedReason)
	require.Empty(t, p.Schedules.Next(got, 5), "a paused schedule fires no more")
	require.NoError(t, p.Schedules.Tick(ctx))
	require.Len(t, q.fired, 1)
}
