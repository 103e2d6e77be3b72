package barrage

import (
	"time"

	"github.com/google/uuid"
)

// AuditEvent is one entry of the audit log: who did what to which object, from which address,
// when, and with what outcome. Entries are appended and never changed.
type AuditEvent struct {
	ID uuid.UUID // a UUIDv7: entries sort by it as by time
	At time.Time
	// ActorKind is "user", "agent" or "anonymous"; ActorID and ActorEmail name the user (a
	// failed sign-in names the email it tried, with no id).
	ActorKind  string
	ActorID    *uuid.UUID
	ActorEmail string
	// TokenID is the personal API token the request carried, if any.
	TokenID *uuid.UUID
	// Action is what was done, "object.verb": "token.create", "run.cancel".
	Action     string
	ObjectKind string
	ObjectID   string
	// SubjectID is the user the event concerns when it is not the actor: the account a sign-in
	// tried, the user an admin changed. They read the event in their own log.
	SubjectID *uuid.UUID
	// ProjectID is the project the object is in, when it is in one: its owners read the event.
	ProjectID *uuid.UUID
	Address   string
	// Outcome is "success" or "failure"; Status is the API's answer, Reason its detail for a
	// failure.
	Outcome   string
	Status    int
	Reason    string
	RequestID string
	// Detail says what else the event holds: the fields a change set, never a secret's value.
	Detail map[string]any
}

// The audit log's outcomes.
const (
	AuditSuccess = "success"
	AuditFailure = "failure"
)

// AuditFilter selects entries of the audit log, newest first.
type AuditFilter struct {
	// Reader, when set, keeps the entries that user may read who is no admin: those they did,
	// those that concern them, and those of Owned, the projects they own.
	Reader  *uuid.UUID
	Owned   []uuid.UUID
	Project *uuid.UUID
	Actor   *uuid.UUID
	// Action is an action ("token.create") or the kind of object before the dot ("token").
	Action     string
	ObjectKind string
	ObjectID   string
	Outcome    string
	Since      *time.Time // at or after
	Until      *time.Time // before
	Before     *uuid.UUID // the cursor: entries older than this one
	Limit      int
}
