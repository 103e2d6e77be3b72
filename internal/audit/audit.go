// Package audit is the append-only record of security and admin events: who did what to which
// object, from which address, when, and with what outcome. The API writes an entry for each
// request to an audited route once it is answered (failures too); what only the code serving
// it knows (the id of what it made, the account a sign-in tried, the fields a change set) it
// adds to the request's Note. Nothing changes or deletes an entry but the retention.
package audit

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
)

// DefaultRetention is how long entries are kept unless the operator says otherwise.
const DefaultRetention = 400 * 24 * time.Hour

// Store is what the audit log needs of storage.
type Store interface {
	barrage.ProjectFinder
	AppendAudit(ctx context.Context, e barrage.AuditEvent) error
	AuditEvents(ctx context.Context, f barrage.AuditFilter) ([]barrage.AuditEvent, error)
	PruneAudit(ctx context.Context, keep time.Duration) (int64, error)
}

// Log appends to the audit log and reads it.
type Log struct {
	store Store
	log   *slog.Logger
	now   func() time.Time
	keep  time.Duration
}

// New returns the audit log on store, keeping entries for keep (DefaultRetention when 0).
func New(store Store, log *slog.Logger, keep time.Duration) *Log {
	if keep <= 0 {
		keep = DefaultRetention
	}
	return &Log{store: store, log: log, now: time.Now, keep: keep}
}

// Append records e, its id and time given here. An entry that cannot be stored is logged as an
// error, with what it said: the request it records has been answered already.
func (l *Log) Append(ctx context.Context, e barrage.AuditEvent) {
	e.ID = uuid.Must(uuid.NewV7())
	e.At = l.now()
	if err := l.store.AppendAudit(ctx, e); err != nil {
		l.log.ErrorContext(ctx, "audit event not stored", slog.String("error", err.Error()),
			slog.String("action", e.Action), slog.String("object_id", e.ObjectID), slog.String("outcome", e.Outcome))
	}
}

// Events reads a page of the log, newest first, as p may: an admin reads every entry, anyone
// else those they did, those that concern them, and those of the projects they own.
func (l *Log) Events(ctx context.Context, p barrage.Principal, f barrage.AuditFilter) (barrage.Page[barrage.AuditEvent], error) {
	f.Reader, f.Owned = nil, nil
	if p.TokenProject != nil {
		f.Project = p.TokenProject // a token limited to a project reads nothing past it
	}
	if p.User.Role != barrage.RoleAdmin {
		id := p.User.ID
		f.Reader, f.Owned = &id, p.Projects(barrage.ProjectOwner)
		if f.Owned == nil {
			f.Owned = []uuid.UUID{}
		}
	}
	limit := f.Limit
	f.Limit++
	rows, err := l.store.AuditEvents(ctx, f)
	if err != nil {
		return barrage.Page[barrage.AuditEvent]{}, err
	}
	return barrage.NewPage(rows, limit, func(e barrage.AuditEvent) uuid.UUID { return e.ID }), nil
}

// ProjectOf finds the project an object of kind is in, for its entry: nil when it is in none, or
// is gone.
func (l *Log) ProjectOf(ctx context.Context, kind barrage.ObjectKind, id string) *uuid.UUID {
	oid, err := uuid.Parse(id)
	if err != nil {
		return nil
	}
	if kind == "project" {
		return &oid
	}
	project, err := l.store.ProjectOf(ctx, kind, oid)
	if err != nil {
		return nil
	}
	return &project
}

// Prune deletes the entries older than the retention.
func (l *Log) Prune(ctx context.Context) (int64, error) { return l.store.PruneAudit(ctx, l.keep) }

// Note is what the code serving an audited request adds to its entry. Its methods do nothing on
// a nil Note (a request that is not audited, a call from outside the API).
type Note struct {
	mu        sync.Mutex
	action    string
	project   *uuid.UUID
	actorID   *uuid.UUID
	email     string
	objectID  string
	subjectID *uuid.UUID
	reason    string
	detail    map[string]any
}

type noteKey struct{}

// WithNote returns ctx carrying a new Note, and the Note.
func WithNote(ctx context.Context) (context.Context, *Note) {
	n := &Note{}
	return context.WithValue(ctx, noteKey{}, n), n
}

// NoteFrom returns the Note ctx carries, or nil.
func NoteFrom(ctx context.Context) *Note {
	n, _ := ctx.Value(noteKey{}).(*Note)
	return n
}

func (n *Note) set(f func(n *Note)) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	f(n)
}

// Actor names who acted on a route open to anyone (sign-in, sign-up): the user's id when known,
// and the email they gave.
func Actor(ctx context.Context, id *uuid.UUID, email string) {
	NoteFrom(ctx).set(func(n *Note) { n.actorID, n.email = id, email })
}

// Rename says what was done more precisely than the route does: a change of the account that
// sets its password is "user.change_password".
func Rename(ctx context.Context, action string) {
	NoteFrom(ctx).set(func(n *Note) { n.action = action })
}

// Object names the object acted on, when the route's path does not: the id of what was made.
func Object(ctx context.Context, id string) {
	NoteFrom(ctx).set(func(n *Note) { n.objectID = id })
}

// Project names the project the object is in, when the route's path does not tell it.
func Project(ctx context.Context, id uuid.UUID) {
	NoteFrom(ctx).set(func(n *Note) { n.project = &id })
}

// Subject names the user the event concerns, when it is not the actor.
func Subject(ctx context.Context, id uuid.UUID) {
	NoteFrom(ctx).set(func(n *Note) { n.subjectID = &id })
}

// Detail adds what else the event says under key: a field a change set, never a secret.
func Detail(ctx context.Context, key string, value any) {
	NoteFrom(ctx).set(func(n *Note) {
		if n.detail == nil {
			n.detail = map[string]any{}
		}
		n.detail[key] = value
	})
}

// Failed records why the request failed, as its answer said.
func Failed(ctx context.Context, reason string) {
	NoteFrom(ctx).set(func(n *Note) { n.reason = reason })
}

// Fill completes e with what the note holds: the actor when the request had none signed in,
// the object when e has none, the subject, the reason of a failure and the detail.
func (n *Note) Fill(e *barrage.AuditEvent) {
	n.set(func(n *Note) {
		if n.action != "" {
			e.Action = n.action
		}
		if e.ActorID == nil && n.actorID != nil {
			e.ActorID, e.ActorKind = n.actorID, "user"
		}
		if e.ActorEmail == "" {
			e.ActorEmail = n.email
		}
		if n.objectID != "" {
			e.ObjectID = n.objectID
		}
		e.SubjectID = n.subjectID
		if n.project != nil {
			e.ProjectID = n.project
		}
		if e.Outcome == barrage.AuditFailure {
			e.Reason = n.reason
		}
		e.Detail = n.detail
	})
}
