package barrage

import (
	"time"

	"github.com/google/uuid"
)

// Schedule runs a test by the clock (one revision of it, or its latest), as its owner: by a cron expression read
// in a time zone, or every so long ("@every 30m").
type Schedule struct {
	ID        uuid.UUID
	ProjectID uuid.UUID
	TestID    uuid.UUID
	// OwnerID made it: its runs start as them, and count against their license.
	OwnerID  uuid.UUID
	Name     string
	Cron     string
	TimeZone string
	// Revision is the test's revision each firing runs; 0 runs its latest.
	Revision int
	// What each run asks for: agents by id, or how many (0: one); load overrides; the script's
	// environment.
	AgentIDs []uuid.UUID
	Agents   int
	Load     LoadOverrides
	Env      map[string]string
	// NextAt is when it fires next (while it is not paused).
	NextAt       time.Time
	PausedAt     *time.Time
	PausedReason string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Firing is one time a schedule was due: the run it started, or why it started none.
type Firing struct {
	ScheduleID uuid.UUID
	DueAt      time.Time
	RunID      *uuid.UUID
	Error      string
	FiredAt    *time.Time
}
