package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/postgres/dbsqlc"
)

// AppendAudit appends e to the audit log.
func (s *Store) AppendAudit(ctx context.Context, e barrage.AuditEvent) error {
	detail, err := json.Marshal(e.Detail)
	if err != nil || e.Detail == nil {
		detail = []byte("{}")
	}
	err = s.q.AuditInsert(ctx, s.pool, dbsqlc.AuditInsertParams{
		ID: e.ID, At: e.At, ActorKind: e.ActorKind, ActorID: e.ActorID, ActorEmail: e.ActorEmail, TokenID: e.TokenID,
		Action: e.Action, ObjectKind: e.ObjectKind, ObjectID: e.ObjectID, SubjectID: e.SubjectID, ProjectID: e.ProjectID,
		Address: e.Address, Outcome: e.Outcome, Status: int32(e.Status), Reason: e.Reason, RequestID: e.RequestID, Detail: detail,
	})
	return translate(err, "audit event")
}

// AuditEvents reads the audit log newest first, as f selects, at most f.Limit entries.
func (s *Store) AuditEvents(ctx context.Context, f barrage.AuditFilter) ([]barrage.AuditEvent, error) {
	rows, err := s.q.AuditList(ctx, s.pool, dbsqlc.AuditListParams{
		Reader: f.Reader, Owned: f.Owned, Project: f.Project, Actor: f.Actor, Action: optional(f.Action), ObjectKind: optional(f.ObjectKind), ObjectID: optional(f.ObjectID),
		Outcome: optional(f.Outcome), Since: f.Since, Until: f.Until, Before: f.Before, MaxRows: int32(f.Limit),
	})
	if err != nil {
		return nil, translate(err, "audit events")
	}
	out := make([]barrage.AuditEvent, len(rows))
	for i, r := range rows {
		out[i] = barrage.AuditEvent{
			ID: r.ID, At: r.At, ActorKind: r.ActorKind, ActorID: r.ActorID, ActorEmail: r.ActorEmail, TokenID: r.TokenID,
			Action: r.Action, ObjectKind: r.ObjectKind, ObjectID: r.ObjectID, SubjectID: r.SubjectID, ProjectID: r.ProjectID, Address: r.Address,
			Outcome: r.Outcome, Status: int(r.Status), Reason: r.Reason, RequestID: r.RequestID,
		}
		if err := json.Unmarshal(r.Detail, &out[i].Detail); err != nil {
			return nil, fmt.Errorf("audit event %s: detail: %w", r.ID, err)
		}
	}
	return out, nil
}

// PruneAudit deletes the audit log's entries older than keep, and nothing else: the table's
// trigger lets a delete through only for entries past the retention its transaction names.
func (s *Store) PruneAudit(ctx context.Context, keep time.Duration) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		secs := fmt.Sprintf("%d seconds", int64(keep/time.Second))
		if _, err := tx.Exec(ctx, "SELECT set_config('barrage.audit_retention', $1, true)", secs); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, "DELETE FROM audit_events WHERE at < now() - $1::interval", secs)
		n = tag.RowsAffected()
		return err
	})
	return n, translate(err, "audit events")
}

// optional is s as a nullable parameter: "" is NULL, which filters nothing.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
