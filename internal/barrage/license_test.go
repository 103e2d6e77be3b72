package barrage_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
)

func TestLicenseCheckNamesEachViolation(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	demo := barrage.DemoLicense.Issue(now)
	require.Equal(t, now.Add(14*24*time.Hour), demo.ValidUntil)

	require.NoError(t, demo.Check(now, barrage.Load{VUs: 100, Duration: 30 * time.Minute, ActiveRuns: 1}))

	err := demo.Check(now, barrage.Load{VUs: 500, Duration: time.Minute})
	require.ErrorIs(t, err, barrage.ErrLimitExceeded)
	var le *barrage.LimitError
	require.ErrorAs(t, err, &le)
	require.Equal(t, []barrage.LimitViolation{{Limit: "max_vus", Allowed: 100, Requested: 500}}, le.Violations)
	require.Contains(t, err.Error(), "max_vus: allowed 100, requested 500")

	err = demo.Check(now, barrage.Load{VUs: 101, Duration: time.Hour, ActiveRuns: 2})
	require.ErrorAs(t, err, &le)
	require.Equal(t, []barrage.LimitViolation{
		{Limit: "max_vus", Allowed: 100, Requested: 101},
		{Limit: "max_run_duration_seconds", Allowed: int64(1800), Requested: int64(3600)},
		{Limit: "max_concurrent_runs", Allowed: 2, Requested: 3},
	}, le.Violations)

	// A fraction of a second past the limit reads as the next second, not the limit itself.
	err = demo.Check(now, barrage.Load{VUs: 1, Duration: 30*time.Minute + time.Millisecond})
	require.ErrorContains(t, err, "max_run_duration_seconds: allowed 1800, requested 1801")

	later := now.Add(15 * 24 * time.Hour)
	err = demo.Check(later, barrage.Load{VUs: 1, Duration: time.Second})
	require.ErrorAs(t, err, &le)
	require.Len(t, le.Violations, 1)
	require.Equal(t, "valid_until", le.Violations[0].Limit)
	require.Equal(t, "2026-12-06T12:00:00Z", le.Violations[0].Allowed)

	var none *barrage.License
	require.NoError(t, none.Check(later, barrage.Load{VUs: 1 << 20, Duration: 100 * time.Hour}), "no license, no limits")
}

// The shared demo agent caps a job at 500 VUs and 5 minutes; with a demo license the tighter of
// each applies.
func TestLimitsTightest(t *testing.T) {
	t.Parallel()
	agent := barrage.Limits{MaxVUs: 500, MaxRunDuration: 5 * time.Minute}
	eff := barrage.DemoLicense.Limits.Tightest(agent)
	require.Equal(t, barrage.Limits{MaxVUs: 100, MaxRunDuration: 5 * time.Minute, MaxConcurrentRuns: 2}, eff)
	err := eff.Check(barrage.Load{VUs: 50, Duration: 10 * time.Minute})
	require.ErrorIs(t, err, barrage.ErrLimitExceeded)
	require.Contains(t, err.Error(), "max_run_duration_seconds: allowed 300, requested 600")
	require.Equal(t, agent, barrage.Limits{}.Tightest(agent), "zero means no limit")
}

func TestNewPage(t *testing.T) {
	t.Parallel()
	id := func(n int) uuid.UUID { return uuid.UUID{byte(n)} }
	rows := []int{1, 2, 3, 4}
	p := barrage.NewPage(rows, 3, id)
	require.Equal(t, []int{1, 2, 3}, p.Items)
	require.NotNil(t, p.Next)
	require.Equal(t, id(3), *p.Next)
	p = barrage.NewPage(rows[:3], 3, id)
	require.Equal(t, []int{1, 2, 3}, p.Items)
	require.Nil(t, p.Next)
}
