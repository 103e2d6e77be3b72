package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/postgres/dbsqlc"
)

// CreateSchedule stores a schedule, unless its project has max already.
func (s *Store) CreateSchedule(ctx context.Context, sc barrage.Schedule, max int) (barrage.Schedule, error) {
	load, err := json.Marshal(sc.Load)
	if err != nil {
		return barrage.Schedule{}, err
	}
	env, err := json.Marshal(sc.Env)
	if err != nil {
		return barrage.Schedule{}, err
	}
	var row dbsqlc.Schedule
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := s.q.ProjectLock(ctx, tx, sc.ProjectID); err != nil {
			return translate(err, "project")
		}
		n, err := s.q.ScheduleCount(ctx, tx, sc.ProjectID)
		if err != nil {
			return err
		}
		if n >= int64(max) {
			return barrage.Errorf(barrage.ErrLimitExceeded, "the project has %d schedules, the most one may: delete one first", n)
		}
		row, err = s.q.ScheduleInsert(ctx, tx, dbsqlc.ScheduleInsertParams{ID: sc.ID, ProjectID: sc.ProjectID, TestID: sc.TestID,
			OwnerID: sc.OwnerID, Name: sc.Name, Cron: sc.Cron, TimeZone: sc.TimeZone, Revision: int32(sc.Revision), AgentIds: nonNil(sc.AgentIDs),
			Agents: int32(sc.Agents), Load: load, Env: env, NextAt: sc.NextAt})
		return translate(err, "schedule")
	})
	if err != nil {
		return barrage.Schedule{}, err
	}
	return scheduleFromRow(row)
}

// Schedule reads a schedule of the projects given.
func (s *Store) Schedule(ctx context.Context, projects []uuid.UUID, id uuid.UUID) (barrage.Schedule, error) {
	row, err := s.q.ScheduleGet(ctx, s.pool, dbsqlc.ScheduleGetParams{ID: id, Projects: projects})
	if err != nil {
		return barrage.Schedule{}, translate(err, "schedule")
	}
	return scheduleFromRow(row)
}

// ScheduleByID reads a schedule by id alone, for its firings.
func (s *Store) ScheduleByID(ctx context.Context, id uuid.UUID) (barrage.Schedule, error) {
	row, err := s.q.ScheduleGetByID(ctx, s.pool, id)
	if err != nil {
		return barrage.Schedule{}, translate(err, "schedule")
	}
	return scheduleFromRow(row)
}

// Schedules lists the schedules of the projects given (of one test, when given), newest first.
func (s *Store) Schedules(ctx context.Context, projects []uuid.UUID, test *uuid.UUID, before *uuid.UUID, limit int) ([]barrage.Schedule, error) {
	rows, err := s.q.ScheduleList(ctx, s.pool, dbsqlc.ScheduleListParams{Projects: projects, TestID: test, Before: before, MaxRows: int32(limit)})
	if err != nil {
		return nil, err
	}
	out := make([]barrage.Schedule, len(rows))
	for i, r := range rows {
		if out[i], err = scheduleFromRow(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// PauseSchedule pauses a schedule of the projects given, saying why, or resumes it to fire next
// at next.
func (s *Store) PauseSchedule(ctx context.Context, projects []uuid.UUID, id uuid.UUID, paused bool, reason string, next time.Time) (barrage.Schedule, error) {
	row, err := s.q.SchedulePause(ctx, s.pool, dbsqlc.SchedulePauseParams{ID: id, Projects: projects, Paused: paused, Reason: reason, NextAt: next})
	if err != nil {
		return barrage.Schedule{}, translate(err, "schedule")
	}
	return scheduleFromRow(row)
}

// PauseScheduleByID pauses a schedule for its own reasons.
func (s *Store) PauseScheduleByID(ctx context.Context, id uuid.UUID, reason string) error {
	return s.q.SchedulePauseByID(ctx, s.pool, dbsqlc.SchedulePauseByIDParams{ID: id, Reason: reason})
}

// DeleteSchedule removes a schedule of the projects given, with its firings.
func (s *Store) DeleteSchedule(ctx context.Context, projects []uuid.UUID, id uuid.UUID) error {
	n, err := s.q.ScheduleDelete(ctx, s.pool, dbsqlc.ScheduleDeleteParams{ID: id, Projects: projects})
	if err == nil && n == 0 {
		return barrage.Errorf(barrage.ErrNotFound, "schedule not found")
	}
	return err
}

// FireDue takes each schedule due by now and, in one transaction: records its firing and queues
// the firing's run (UseNotifier), or, when it was due longer ago than missed (the server was not
// running), records the firing as missed; and advances it to next(schedule, now), or pauses it
// with the error next gives. A firing is recorded, and its run queued, once whichever replica
// gets there first. It returns how many runs it queued.
func (s *Store) FireDue(ctx context.Context, now time.Time, missed time.Duration, next func(barrage.Schedule, time.Time) (time.Time, error)) (int, error) {
	if s.notifier == nil {
		return 0, errors.New("schedules: the store queues no firing (UseNotifier)")
	}
	fired := 0
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := s.q.ScheduleDue(ctx, tx, now)
		if err != nil {
			return err
		}
		for _, row := range rows {
			sc, err := scheduleFromRow(row)
			if err != nil {
				return err
			}
			if now.Sub(sc.NextAt) > missed {
				err := s.q.ScheduleFiringMissed(ctx, tx, dbsqlc.ScheduleFiringMissedParams{ScheduleID: sc.ID, DueAt: sc.NextAt,
					Error: fmt.Sprintf("missed: the server was not running when it was due (it took the schedule up %s later)", now.Sub(sc.NextAt).Round(time.Second))})
				if err != nil {
					return err
				}
			} else {
				n, err := s.q.ScheduleFiringInsert(ctx, tx, dbsqlc.ScheduleFiringInsertParams{ScheduleID: sc.ID, DueAt: sc.NextAt})
				if err != nil {
					return err
				}
				if n == 1 {
					if err := s.notifier.Fire(ctx, tx, sc.ID, sc.NextAt); err != nil {
						return err
					}
					fired++
				}
			}
			at, err := next(sc, now)
			if err != nil {
				if err := s.q.SchedulePauseByID(ctx, tx, dbsqlc.SchedulePauseByIDParams{ID: sc.ID, Reason: "paused: " + err.Error()}); err != nil {
					return err
				}
				continue
			}
			if err := s.q.ScheduleAdvance(ctx, tx, dbsqlc.ScheduleAdvanceParams{ID: sc.ID, NextAt: at}); err != nil {
				return err
			}
		}
		return nil
	})
	return fired, err
}

// FiringDone records what a firing did: the run it started, or why it started none.
func (s *Store) FiringDone(ctx context.Context, schedule uuid.UUID, dueAt time.Time, run *uuid.UUID, why string) error {
	return s.q.ScheduleFiringDone(ctx, s.pool, dbsqlc.ScheduleFiringDoneParams{ScheduleID: schedule, DueAt: dueAt, RunID: run, Error: why})
}

// Firings lists a schedule's newest firings, newest first.
func (s *Store) Firings(ctx context.Context, schedule uuid.UUID, limit int) ([]barrage.Firing, error) {
	rows, err := s.q.ScheduleFiringList(ctx, s.pool, dbsqlc.ScheduleFiringListParams{ScheduleID: schedule, MaxRows: int32(limit)})
	if err != nil {
		return nil, err
	}
	return each(rows, func(r dbsqlc.ScheduleFiring) barrage.Firing {
		return barrage.Firing{ScheduleID: r.ScheduleID, DueAt: r.DueAt, RunID: r.RunID, Error: r.Error, FiredAt: r.FiredAt}
	}), nil
}

func scheduleFromRow(r dbsqlc.Schedule) (barrage.Schedule, error) {
	sc := barrage.Schedule{ID: r.ID, ProjectID: r.ProjectID, TestID: r.TestID, OwnerID: r.OwnerID, Name: r.Name, Cron: r.Cron,
		TimeZone: r.TimeZone, Revision: int(r.Revision), AgentIDs: nonNil(r.AgentIds), Agents: int(r.Agents), NextAt: r.NextAt, PausedAt: r.PausedAt,
		PausedReason: r.PausedReason, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if err := json.Unmarshal(r.Load, &sc.Load); err != nil {
		return sc, fmt.Errorf("schedule %s: load: %w", r.ID, err)
	}
	if err := json.Unmarshal(r.Env, &sc.Env); err != nil {
		return sc, fmt.Errorf("schedule %s: env: %w", r.ID, err)
	}
	return sc, nil
}
