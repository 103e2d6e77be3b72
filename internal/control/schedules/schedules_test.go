package schedules

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
)

// A cron expression is read in its time zone, across a change of the clocks; every so long is
// from the last firing.
func TestASchedulesNextFiringsAreReadInItsTimeZone(t *testing.T) {
	s := New(nil, slog.New(slog.DiscardHandler), Config{}, Deps{})
	zurich := barrage.Schedule{Cron: "0 2 * * *", TimeZone: "Europe/Zurich"}
	// 02:00 in Zurich is 01:00 UTC in winter and 00:00 UTC in summer; the clocks change on 29 March 2026.
	at, err := s.next(zurich, time.Date(2026, 3, 27, 12, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 3, 28, 1, 0, 0, 0, time.UTC), at)
	sc := zurich
	sc.NextAt = at
	require.Equal(t, []time.Time{at, time.Date(2026, 3, 30, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 31, 0, 0, 0, 0, time.UTC)}, s.Next(sc, 3),
		"02:00 did not happen in Zurich on 29 March (the clocks went from 02:00 to 03:00): that day has no firing; then 02:00 summer time")

	every := barrage.Schedule{Cron: "@every 30m0s", TimeZone: "UTC"}
	at, err = s.next(every, time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 11, 28, 10, 30, 0, 0, time.UTC), at)

	paused := every
	now := time.Now()
	paused.PausedAt = &now
	require.Empty(t, s.Next(paused, 5))
}
