package httpapi

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/barrage-load/barrage/internal/audit"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/postgres"
)

// problem is an RFC 9457 problem document.
type problem struct {
	Type       string                   `json:"type"`
	Title      string                   `json:"title"`
	Status     int                      `json:"status"`
	Detail     string                   `json:"detail,omitempty"`
	Instance   string                   `json:"instance,omitempty"`
	RequestID  string                   `json:"request_id,omitempty"`
	Errors     []barrage.FieldError     `json:"errors,omitempty"`
	Violations []barrage.LimitViolation `json:"violations,omitempty"`
	Quota      *barrage.QuotaError      `json:"quota,omitempty"`

	retryAfter int // seconds, for 429 and 503
}

// The problem types Barrage names; other statuses use about:blank.
const (
	typeValidation  = "urn:barrage:problem:validation"
	typeMalformed   = "urn:barrage:problem:malformed-request"
	typeLimit       = "urn:barrage:problem:limit-exceeded"
	typeRateLimited = "urn:barrage:problem:rate-limited"
	typeTooLarge    = "urn:barrage:problem:body-too-large"
	typeQuota       = "urn:barrage:problem:quota-exceeded"
)

// errorKinds maps domain error kinds to HTTP statuses, in the order they are tried.
var errorKinds = []struct {
	kind   error
	status int
}{
	{barrage.ErrInvalid, http.StatusUnprocessableEntity},
	{barrage.ErrLimitExceeded, http.StatusUnprocessableEntity},
	{barrage.ErrNotFound, http.StatusNotFound},
	{barrage.ErrConflict, http.StatusConflict},
	{barrage.ErrUnauthorized, http.StatusUnauthorized},
	{barrage.ErrForbidden, http.StatusForbidden},
	{barrage.ErrRateLimited, http.StatusTooManyRequests},
	{barrage.ErrOutdated, http.StatusUpgradeRequired},
	{barrage.ErrNoAnswer, http.StatusGatewayTimeout},
	{barrage.ErrTooLarge, http.StatusRequestEntityTooLarge},
	{barrage.ErrGone, http.StatusGone},
	{barrage.ErrTimeout, http.StatusRequestTimeout},
}

// badParam is a query or path parameter refused by a handler; like the validator's parameter
// errors, it answers 400.
type badParam struct{ field, reason string }

func (e *badParam) Error() string { return e.field + ": " + e.reason }

// problemFor translates an error into the problem the client sees. Domain errors carry a
// client-safe message; anything else is a 500 that says nothing of its cause.
func problemFor(err error) problem {
	var bp *badParam
	if errors.As(err, &bp) {
		return problem{Type: typeValidation, Title: "Validation failed", Status: http.StatusBadRequest,
			Detail: bp.Error(), Errors: []barrage.FieldError{{Field: bp.field, Reason: bp.reason}}}
	}
	for _, k := range errorKinds {
		if !errors.Is(err, k.kind) {
			continue
		}
		p := problem{Type: "about:blank", Status: k.status, Title: http.StatusText(k.status), Detail: err.Error()}
		var inv *barrage.InvalidError
		var lim *barrage.LimitError
		var rl *barrage.RateLimitError
		var qe *barrage.QuotaError
		switch {
		case errors.As(err, &inv):
			p.Type, p.Title, p.Errors = typeValidation, "Validation failed", inv.Fields
		case errors.As(err, &lim):
			p.Type, p.Title, p.Violations = typeLimit, "Limit exceeded", lim.Violations
		case errors.As(err, &rl):
			p.Type, p.retryAfter = typeRateLimited, rl.RetryAfterSeconds
		case errors.As(err, &qe):
			p.Type, p.Title = typeQuota, "Quota exceeded"
			p.Quota = qe
		}
		var de *barrage.Error
		if errors.As(err, &de) {
			p.Detail = de.Message
		}
		return p
	}
	if postgres.Unavailable(err) {
		return problem{Type: "about:blank", Status: http.StatusServiceUnavailable, Title: http.StatusText(http.StatusServiceUnavailable),
			Detail: "The server cannot reach its database just now; try again shortly.", retryAfter: 5}
	}
	return problem{Type: "about:blank", Status: http.StatusInternalServerError, Title: http.StatusText(http.StatusInternalServerError),
		Detail: "The server could not complete the request; it has been logged."}
}

// writeProblem writes p as application/problem+json.
func writeProblem(w http.ResponseWriter, r *http.Request, p problem) {
	p.Instance = r.URL.Path
	p.RequestID = requestIDFrom(r.Context())
	if p.Type == "" {
		p.Type = "about:blank"
	}
	if p.Title == "" {
		p.Title = http.StatusText(p.Status)
	}
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Cache-Control", "no-store")
	if unread(r) {
		// Refused before its body was read: the connection ends with the answer, rather than
		// the server reading on (a chunked body with no end would hold the answer back, and
		// the connection until the read timeout).
		h.Set("Connection", "close")
		defer func() { _ = http.NewResponseController(w).SetReadDeadline(time.Now()) }()
	}
	if p.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(p.retryAfter))
	}
	if p.Status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="barrage"`)
	}
	audit.Failed(r.Context(), p.Detail)
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// statusClientClosed is what the access log shows for a request whose client went away before
// its answer (nginx's 499).
const statusClientClosed = 499

// writeError writes err as a problem; a 500 is logged here, once, with its cause. A request
// whose client went away is not the server's error: whatever it failed with, it is not logged
// as one.
func writeError(log *slog.Logger, w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		log.DebugContext(r.Context(), "client went away", slog.String("error", err.Error()))
		if !responseStarted(w) {
			w.WriteHeader(statusClientClosed)
		}
		return
	}
	if responseStarted(w) {
		// A stream that failed half-way (an artifact's download): the status is sent, and
		// what the client has is short; nothing more can be said.
		log.WarnContext(r.Context(), "response cut short", slog.String("error", err.Error()))
		return
	}
	p := problemFor(err)
	switch p.Status {
	case http.StatusInternalServerError:
		log.ErrorContext(r.Context(), "request failed", slog.String("error", err.Error()))
	case http.StatusServiceUnavailable:
		log.WarnContext(r.Context(), "the database is out of reach", slog.String("error", err.Error()))
	}
	writeProblem(w, r, p)
}

// responseStarted says whether w, or a writer it wraps, has sent its status already.
func responseStarted(w http.ResponseWriter) bool {
	for {
		if rec, ok := w.(*statusRecorder); ok {
			return rec.status != 0
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return false
		}
		w = u.Unwrap()
	}
}
