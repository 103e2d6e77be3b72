package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/postgres/dbsqlc"
)

// CreateTarget registers t in its project, counted against its owner's, up to
// barrage.MaxTargets of them.
func (s *Store) CreateTarget(ctx context.Context, t barrage.Target, q Quota) (barrage.Target, error) {
	var row dbsqlc.Target
	err := s.inQuotaTx(ctx, q, func(tx pgx.Tx) error {
		if err := s.q.TargetLock(ctx, tx, t.OwnerID.String()); err != nil {
			return err
		}
		var err error
		row, err = s.q.TargetInsert(ctx, tx, dbsqlc.TargetInsertParams{
			ID: t.ID, OwnerID: t.OwnerID, ProjectID: t.ProjectID, Scheme: t.Scheme, Host: t.Host, Port: int32(t.Port), Token: t.Token, MaxTargets: barrage.MaxTargets,
		})
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return barrage.Target{}, barrage.Invalid("url", fmt.Sprintf("an account registers at most %d targets: remove one first", barrage.MaxTargets))
	}
	if err != nil {
		return barrage.Target{}, translate(err, fmt.Sprintf("target %s:%d", t.Host, t.Port))
	}
	return targetFromRow(row), nil
}

// Target reads target id of the projects given; any other is not found.
func (s *Store) Target(ctx context.Context, projects []uuid.UUID, id uuid.UUID) (barrage.Target, error) {
	row, err := s.q.TargetGet(ctx, s.pool, dbsqlc.TargetGetParams{ID: id, Projects: projects})
	if err != nil {
		return barrage.Target{}, translate(err, "target")
	}
	return targetFromRow(row), nil
}

// Targets lists the targets of the projects given by host and port.
func (s *Store) Targets(ctx context.Context, projects []uuid.UUID) ([]barrage.Target, error) {
	rows, err := s.q.TargetList(ctx, s.pool, projects)
	if err != nil {
		return nil, err
	}
	out := make([]barrage.Target, len(rows))
	for i, r := range rows {
		out[i] = targetFromRow(r)
	}
	return out, nil
}

// DeleteTarget removes target id of the projects given.
func (s *Store) DeleteTarget(ctx context.Context, projects []uuid.UUID, id uuid.UUID) error {
	n, err := s.q.TargetDelete(ctx, s.pool, dbsqlc.TargetDeleteParams{ID: id, Projects: projects})
	if err != nil {
		return err
	}
	if n == 0 {
		return barrage.Errorf(barrage.ErrNotFound, "target not found")
	}
	return nil
}

// TargetChecked records a check of target id of the projects given made at: it proved control
// from address when checkError is empty.
func (s *Store) TargetChecked(ctx context.Context, projects []uuid.UUID, id uuid.UUID, at time.Time, address netip.Addr, checkError string) (barrage.Target, error) {
	addr := ""
	if checkError == "" && address.IsValid() {
		addr = address.String()
	}
	row, err := s.q.TargetChecked(ctx, s.pool, dbsqlc.TargetCheckedParams{ID: id, Projects: projects, CheckedAt: at, CheckError: checkError, Address: addr})
	if err != nil {
		return barrage.Target{}, translate(err, "target")
	}
	return targetFromRow(row), nil
}

func targetFromRow(r dbsqlc.Target) barrage.Target {
	t := barrage.Target{
		ID: r.ID, OwnerID: r.OwnerID, ProjectID: r.ProjectID, Scheme: r.Scheme, Host: r.Host, Port: int(r.Port), Token: r.Token,
		VerifiedAt: r.VerifiedAt, CheckedAt: r.CheckedAt, CheckError: r.CheckError, CreatedAt: r.CreatedAt,
	}
	if a, err := netip.ParseAddr(r.Address); err == nil {
		t.Address = a
	}
	return t
}
