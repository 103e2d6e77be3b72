// Package barrage holds Barrage's domain: the types every other package speaks in, the errors
// they return, and rules that belong to no single adapter, such as license limits.
package barrage

import (
	"errors"
	"fmt"
	"time"
)

// The kinds of domain error. Adapters translate to and from these: the store maps driver errors
// onto them, the HTTP edge maps them onto statuses.
var (
	ErrNotFound      = errors.New("not found")
	ErrConflict      = errors.New("conflict")
	ErrInvalid       = errors.New("invalid")
	ErrUnauthorized  = errors.New("unauthorized")
	ErrForbidden     = errors.New("forbidden")
	ErrLimitExceeded = errors.New("limit exceeded")
	ErrRateLimited   = errors.New("rate limited")
	// ErrOutdated: the client (an agent) is older than the server accepts.
	ErrOutdated = errors.New("outdated")
	// ErrNoAnswer: something the request waited on (an agent) did not answer in time.
	ErrNoAnswer = errors.New("no answer")
	// ErrTooLarge: an upload passes its size limit.
	ErrTooLarge = errors.New("too large")
	// ErrTimeout: the client took too long to send the request.
	ErrTimeout = errors.New("timeout")
	// ErrGone: the thing asked for was withdrawn for good (a revoked plugin version).
	ErrGone = errors.New("gone")
)

// FieldError names one input field and why it was refused; Line, when known, is the line of a
// script's source the field is on.
type FieldError struct {
	Field  string `json:"field"`
	Reason string `json:"reason"`
	Line   int    `json:"line,omitempty"`
}

// InvalidError is an ErrInvalid that names the offending fields.
type InvalidError struct {
	Fields []FieldError
}

// Invalid returns an ErrInvalid naming field and reason.
func Invalid(field, reason string) error {
	return &InvalidError{Fields: []FieldError{{Field: field, Reason: reason}}}
}

func (e *InvalidError) Error() string {
	if len(e.Fields) == 1 {
		return fmt.Sprintf("invalid %s: %s", e.Fields[0].Field, e.Fields[0].Reason)
	}
	return fmt.Sprintf("%d invalid fields", len(e.Fields))
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *InvalidError) Unwrap() error { return ErrInvalid }

// Error is a domain error with a message safe to show to the client.
type Error struct {
	Kind    error  // one of the Err* kinds above
	Message string // for the client: no internals
}

// Errorf returns a domain error of the given kind with a client-facing message.
func Errorf(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string { return e.Message }

// Unwrap exposes the kind to errors.Is.
func (e *Error) Unwrap() error { return e.Kind }

// RateLimitError is an ErrRateLimited that says when to retry, and why when Reason is set.
type RateLimitError struct {
	RetryAfterSeconds int
	Reason            string
}

func (e *RateLimitError) Error() string {
	why := e.Reason
	if why == "" {
		why = "too many attempts"
	}
	return fmt.Sprintf("%s, retry in %d s", why, e.RetryAfterSeconds)
}

// Unwrap makes errors.Is(err, ErrRateLimited) hold.
func (e *RateLimitError) Unwrap() error { return ErrRateLimited }

// Rate allows N attempts at once, and N more per Per, refilled continuously: a token bucket, so
// no boundary between windows lets twice the allowance through. The zero Rate allows all.
type Rate struct {
	N   int
	Per time.Duration
}
