// Package schedules runs tests by the clock: a test's schedule (a cron expression read in a time
// zone, or every so long) fires on whichever replica's jobs get there first, once per firing
// (each is recorded by the schedule and the instant it was due), and starts a run of the test's
// revision (or latest) as the schedule's owner. A firing that cannot start a run (a license expired,
// agents busy, a limit reached) is recorded with why, told to the project's channels, and not
// tried again; a schedule whose owner's license expired, or who may no longer run the project's
// tests, pauses itself and says why.
package schedules

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	_ "time/tzdata" // time zones where the system has none (a container)
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/robfig/cron/v3"

	"github.com/barrage-load/barrage/internal/audit"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control/notifications"
	"github.com/barrage-load/barrage/internal/control/runs"
	"github.com/barrage-load/barrage/internal/control/tests"
)

// Store is what schedules keep in PostgreSQL (*postgres.Store).
type Store interface {
	CreateSchedule(ctx context.Context, sc barrage.Schedule, max int) (barrage.Schedule, error)
	Schedule(ctx context.Context, projects []uuid.UUID, id uuid.UUID) (barrage.Schedule, error)
	ScheduleByID(ctx context.Context, id uuid.UUID) (barrage.Schedule, error)
	Schedules(ctx context.Context, projects []uuid.UUID, test *uuid.UUID, before *uuid.UUID, limit int) ([]barrage.Schedule, error)
	PauseSchedule(ctx context.Context, projects []uuid.UUID, id uuid.UUID, paused bool, reason string, next time.Time) (barrage.Schedule, error)
	PauseScheduleByID(ctx context.Context, id uuid.UUID, reason string) error
	DeleteSchedule(ctx context.Context, projects []uuid.UUID, id uuid.UUID) error
	FireDue(ctx context.Context, now time.Time, missed time.Duration, next func(barrage.Schedule, time.Time) (time.Time, error)) (int, error)
	FiringDone(ctx context.Context, schedule uuid.UUID, dueAt time.Time, run *uuid.UUID, why string) error
	Firings(ctx context.Context, schedule uuid.UUID, limit int) ([]barrage.Firing, error)
	UserByID(ctx context.Context, id uuid.UUID) (barrage.User, error)
	Memberships(ctx context.Context, user uuid.UUID) (map[uuid.UUID]barrage.Membership, error)
	barrage.ProjectFinder
}

// Config tunes schedules; zero fields take the defaults.
type Config struct {
	// MinInterval is the shortest time between two firings of a schedule (default a minute).
	MinInterval time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Deps are the services schedules work with.
type Deps struct {
	Runs   *runs.Service
	Tests  *tests.Service
	Notify *notifications.Service
}

// Service is schedules.
type Service struct {
	store Store
	log   *slog.Logger
	cfg   Config
	deps  Deps
}

// New returns schedules on store.
func New(store Store, log *slog.Logger, cfg Config, deps Deps) *Service {
	if cfg.MinInterval <= 0 {
		cfg.MinInterval = time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{store: store, log: log, cfg: cfg, deps: deps}
}

// Input is a schedule asked for: Cron (five fields, or @hourly, @daily...) read in TimeZone
// (UTC when empty), or Every (a duration); and what each run asks for.
type Input struct {
	Name, Cron, Every, TimeZone string
	// Revision is the test's revision to run; 0 runs its latest at each firing.
	Revision int
	AgentIDs []uuid.UUID
	Agents   int
	Load     barrage.LoadOverrides
	Env      map[string]string
}

var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// spec reads a schedule's timing: its expression as stored and its location.
func (s *Service) spec(expr, tz string) (cron.Schedule, *time.Location, error) {
	loc, err := time.LoadLocation(tz)
	if err != nil || tz == "" || strings.EqualFold(tz, "local") {
		return nil, nil, fmt.Errorf("time_zone: %q is no IANA time zone (Europe/Zurich, America/New_York, UTC)", tz)
	}
	sched, err := parser.Parse(expr)
	if err != nil {
		return nil, nil, fmt.Errorf("%w", err)
	}
	return sched, loc, nil
}

// next is when sc fires next after now; an error when it never does (31 February).
func (s *Service) next(sc barrage.Schedule, now time.Time) (time.Time, error) {
	sched, loc, err := s.spec(sc.Cron, sc.TimeZone)
	if err != nil {
		return time.Time{}, err
	}
	at := sched.Next(now.In(loc))
	if at.IsZero() {
		return time.Time{}, errors.New("its cron expression names no time that comes (such as 31 February)")
	}
	return at.UTC(), nil
}

// after is when sc, due at sc.NextAt and fired at now, fires next: from its due time, so that
// every so long does not drift by the tick's lateness; from now when that time is past too.
func (s *Service) after(sc barrage.Schedule, now time.Time) (time.Time, error) {
	at, err := s.next(sc, sc.NextAt)
	if err != nil || at.After(now) {
		return at, err
	}
	return s.next(sc, now)
}

// The bounds of schedules.
const (
	// MaxPerProject bounds a project's schedules.
	MaxPerProject = 50
	// MaxEvery is the longest every.
	MaxEvery = 31 * 24 * time.Hour
	// Missed is how late a firing may be taken up: one due longer ago (the server was not
	// running) is recorded as missed, not run.
	Missed = 2 * time.Minute
)

// Create makes a schedule of test id (p a runner in its project: its runs start as p).
func (s *Service) Create(ctx context.Context, p barrage.Principal, id uuid.UUID, in Input) (barrage.Schedule, error) {
	t, err := s.deps.Tests.Test(ctx, p, id)
	if err != nil {
		return barrage.Schedule{}, err
	}
	if err := p.Need(t.ProjectID, barrage.ProjectRunner); err != nil {
		return barrage.Schedule{}, err
	}
	sc := barrage.Schedule{ID: uuid.Must(uuid.NewV7()), ProjectID: t.ProjectID, TestID: id, OwnerID: p.User.ID,
		TimeZone: in.TimeZone, Revision: in.Revision, AgentIDs: in.AgentIDs, Agents: in.Agents, Load: in.Load, Env: in.Env}
	var fields []barrage.FieldError
	bad := func(field, reason string) { fields = append(fields, barrage.FieldError{Field: field, Reason: reason}) }
	sc.Name = strings.TrimSpace(in.Name)
	if sc.Name == "" {
		sc.Name = t.Name
	}
	if utf8.RuneCountInString(sc.Name) > 100 || strings.ContainsFunc(sc.Name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		bad("name", "at most 100 printable characters")
	}
	if sc.TimeZone == "" {
		sc.TimeZone = "UTC"
	}
	switch {
	case (in.Cron == "") == (in.Every == ""):
		bad("cron", "give cron (five fields, such as \"0 2 * * *\") or every (such as \"30m\"), one of them")
	case in.Every != "":
		d, err := time.ParseDuration(in.Every)
		if err != nil || d < s.cfg.MinInterval || d > MaxEvery {
			bad("every", fmt.Sprintf("want a duration from %s to %s, such as 30m or 6h", s.cfg.MinInterval, MaxEvery))
		}
		sc.Cron = "@every " + d.String()
	default:
		sc.Cron = strings.TrimSpace(in.Cron)
		switch upper := strings.ToUpper(sc.Cron); {
		case strings.HasPrefix(upper, "@EVERY"):
			bad("cron", "say every instead of @every")
		case strings.HasPrefix(upper, "TZ=") || strings.HasPrefix(upper, "CRON_TZ="):
			bad("cron", "say the time zone in time_zone, not in the expression")
		}
	}
	for k, v := range in.Env {
		if k == "" || utf8.RuneCountInString(k) > 100 || strings.ContainsFunc(k, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			bad("env", fmt.Sprintf("%q: a name of 1 to 100 printable characters", k))
		} else if strings.ContainsRune(v, 0) {
			bad("env", fmt.Sprintf("%s: a value without NUL characters", k))
		}
	}
	if len(in.Env) > barrage.MaxRunEnv {
		bad("env", fmt.Sprintf("at most %d values", barrage.MaxRunEnv))
	}
	if len(fields) == 0 {
		if _, _, err := s.spec(sc.Cron, sc.TimeZone); err != nil {
			field, reason, ok := strings.Cut(err.Error(), ": ")
			if !ok || field != "time_zone" {
				field, reason = "cron", err.Error()
			}
			bad(field, reason)
		} else if _, err := s.next(sc, s.cfg.Now()); err != nil {
			bad("cron", err.Error())
		}
	}
	if in.Revision < 0 || in.Revision > t.LatestRevision {
		bad("revision", fmt.Sprintf("the test has revisions 1 to %d (0, or none, runs its latest)", t.LatestRevision))
	}
	if in.Agents < 0 || in.Agents > 100 || len(in.AgentIDs) > 100 {
		bad("agents", "from 1 to 100 agents")
	}
	if err := in.Load.Validate(); err != nil {
		bad("load", err.Error())
	}
	if len(fields) > 0 {
		return barrage.Schedule{}, &barrage.InvalidError{Fields: fields}
	}
	if sc.NextAt, err = s.next(sc, s.cfg.Now()); err != nil {
		return barrage.Schedule{}, err
	}
	sc, err = s.store.CreateSchedule(ctx, sc, MaxPerProject)
	if err != nil {
		return barrage.Schedule{}, err
	}
	audit.Object(ctx, sc.ID.String())
	s.log.InfoContext(ctx, "schedule created", slog.String("schedule_id", sc.ID.String()), slog.String("test_id", id.String()))
	return sc, nil
}

// Schedules lists the schedules of p's projects (of project alone, of test alone, when given),
// newest first.
func (s *Service) Schedules(ctx context.Context, p barrage.Principal, project, test *uuid.UUID, before *uuid.UUID, limit int) (barrage.Page[barrage.Schedule], error) {
	in, err := p.Listed(project)
	if err != nil {
		return barrage.Page[barrage.Schedule]{}, err
	}
	rows, err := s.store.Schedules(ctx, in, test, before, limit+1)
	if err != nil {
		return barrage.Page[barrage.Schedule]{}, err
	}
	return barrage.NewPage(rows, limit, func(sc barrage.Schedule) uuid.UUID { return sc.ID }), nil
}

// Schedule reads schedule id of one of p's projects.
func (s *Service) Schedule(ctx context.Context, p barrage.Principal, id uuid.UUID) (barrage.Schedule, error) {
	return s.store.Schedule(ctx, p.Projects(barrage.ProjectViewer), id)
}

// Next lists the next n times schedule sc fires (none while it is paused).
func (s *Service) Next(sc barrage.Schedule, n int) []time.Time {
	if sc.PausedAt != nil {
		return []time.Time{}
	}
	out := []time.Time{sc.NextAt}
	for len(out) < n {
		at, err := s.next(sc, out[len(out)-1])
		if err != nil {
			break
		}
		out = append(out, at)
	}
	return out
}

// SetPaused pauses schedule id, or resumes it from now (p a runner in its project).
func (s *Service) SetPaused(ctx context.Context, p barrage.Principal, id uuid.UUID, paused bool) (barrage.Schedule, error) {
	sc, err := s.store.Schedule(ctx, p.Projects(barrage.ProjectRunner), id)
	if err != nil {
		return barrage.Schedule{}, s.denied(ctx, p, err, id)
	}
	next, err := s.next(sc, s.cfg.Now())
	if err != nil {
		return barrage.Schedule{}, err
	}
	return s.store.PauseSchedule(ctx, p.Projects(barrage.ProjectRunner), id, paused, "paused by "+p.User.Name, next)
}

// Delete removes schedule id and its firings (p a runner in its project).
func (s *Service) Delete(ctx context.Context, p barrage.Principal, id uuid.UUID) error {
	return s.denied(ctx, p, s.store.DeleteSchedule(ctx, p.Projects(barrage.ProjectRunner), id), id)
}

// Firings lists the newest firings of schedule id of one of p's projects.
func (s *Service) Firings(ctx context.Context, p barrage.Principal, id uuid.UUID, limit int) ([]barrage.Firing, error) {
	if _, err := s.Schedule(ctx, p, id); err != nil {
		return nil, err
	}
	return s.store.Firings(ctx, id, limit)
}

func (s *Service) denied(ctx context.Context, p barrage.Principal, err error, id uuid.UUID) error {
	return p.Denied(ctx, err, barrage.ProjectRunner, s.store, barrage.KindSchedule, id)
}

// Tick fires every schedule that is due (the job every jobs.TickEvery).
func (s *Service) Tick(ctx context.Context) error {
	n, err := s.store.FireDue(ctx, s.cfg.Now(), Missed, s.after)
	if n > 0 {
		s.log.InfoContext(ctx, "schedules fired", slog.Int("count", n))
	}
	return err
}

// Fire starts the run of schedule id's firing due at dueAt, as the schedule's owner, once (its
// idempotency key is the firing's). A firing refused (a license, a limit, agents busy, a test
// gone) is recorded with why and told to the project's channels, and not tried again; one
// refused because the owner's license expired or they may no longer run the project's tests
// also pauses the schedule.
func (s *Service) Fire(ctx context.Context, id uuid.UUID, dueAt time.Time) error {
	sc, err := s.store.ScheduleByID(ctx, id)
	if errors.Is(err, barrage.ErrNotFound) {
		return nil // deleted since
	} else if err != nil {
		return err
	}
	p, err := s.owner(ctx, sc)
	if err != nil {
		return err
	}
	var run barrage.Run
	why, pause := "", ""
	switch {
	case p == nil:
		why, pause = "its owner's account is disabled or gone", "its owner's account is disabled or gone"
	case p.Need(sc.ProjectID, barrage.ProjectRunner) != nil:
		why, pause = "its owner may no longer run the project's tests", "its owner may no longer run the project's tests"
	case p.User.License != nil && !s.cfg.Now().Before(p.User.License.ValidUntil):
		why = fmt.Sprintf("its owner's license expired (valid_until %s)", p.User.License.ValidUntil.UTC().Format(time.RFC3339))
		pause = why
	default:
		key := fmt.Sprintf("schedule-%s-%d", sc.ID, dueAt.Unix())
		run, err = s.deps.Runs.CreateRun(ctx, *p, runs.RunInput{TestID: &sc.TestID, TestRevision: sc.Revision, Load: sc.Load, AgentIDs: sc.AgentIDs,
			Agents: sc.Agents, Env: sc.Env, IdempotencyKey: &key})
		if err != nil {
			if !refusal(err) {
				return err // the database, say: the job tries again
			}
			why = err.Error()
			var lim *barrage.LimitError
			if errors.As(err, &lim) {
				for _, v := range lim.Violations {
					if v.Limit == barrage.LimitValidUntil {
						pause = fmt.Sprintf("its owner's license expired (valid_until %v)", v.Allowed)
					}
				}
			}
		}
	}
	if why == "" {
		s.log.InfoContext(ctx, "schedule fired", slog.String("schedule_id", id.String()), slog.String("run_id", run.ID.String()))
		return s.store.FiringDone(ctx, id, dueAt, &run.ID, "")
	}
	if err := s.store.FiringDone(ctx, id, dueAt, nil, why); err != nil {
		return err
	}
	if pause != "" {
		if err := s.store.PauseScheduleByID(ctx, id, "paused: "+pause); err != nil {
			return err
		}
	}
	s.log.WarnContext(ctx, "schedule could not start its run", slog.String("schedule_id", id.String()), slog.String("why", why))
	return s.deps.Notify.ScheduleFailed(ctx, sc, dueAt, why, pause)
}

// owner is the principal the schedule's runs start as: its owner in its project alone; nil
// when the owner is disabled or gone.
func (s *Service) owner(ctx context.Context, sc barrage.Schedule) (*barrage.Principal, error) {
	u, err := s.store.UserByID(ctx, sc.OwnerID)
	if errors.Is(err, barrage.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	if u.Disabled {
		return nil, nil
	}
	m, err := s.store.Memberships(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	return &barrage.Principal{User: u, Scopes: []barrage.Scope{barrage.ScopeRead, barrage.ScopeWrite}, Memberships: m, TokenProject: &sc.ProjectID}, nil
}

// refusal says err refuses the run for what was asked or allowed, not for the server's trouble.
func refusal(err error) bool {
	for _, kind := range []error{barrage.ErrInvalid, barrage.ErrLimitExceeded, barrage.ErrConflict, barrage.ErrForbidden, barrage.ErrNotFound} {
		if errors.Is(err, kind) {
			return true
		}
	}
	var rl *barrage.RateLimitError
	return errors.As(err, &rl)
}
