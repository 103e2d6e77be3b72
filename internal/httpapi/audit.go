package httpapi

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/audit"
	"github.com/barrage-load/barrage/internal/barrage"
)

// audited is what the audit log records of a route: the action, the kind of object, and how
// the object is named from the request's path (nil: the code serving it names it, audit.Object).
type audited struct {
	action string
	kind   string
	object func(r *http.Request) string
}

// pathParam names the object by a parameter of the route's path.
func pathParam(name string) func(r *http.Request) string {
	return func(r *http.Request) string { return chi.URLParam(r, name) }
}

// pluginVersion names a plugin version as namespace/name@version.
func pluginVersion(r *http.Request) string {
	return chi.URLParam(r, "namespace") + "/" + chi.URLParam(r, "name") + "@" + chi.URLParam(r, "version")
}

// audits are the routes whose requests the audit log records, each once answered, failures
// too: security and admin events. A route's entry here is checked against the contract by
// TestEveryAuditedRouteIsARoute.
var audits = map[string]audited{
	"POST /v1/auth/login":   {action: "auth.login", kind: "user"},
	"POST /v1/auth/session": {action: "auth.login", kind: "user"},
	"POST /v1/auth/signup":  {action: "invitation.use", kind: "invitation"},
	"PATCH /v1/me":          {action: "user.update", kind: "user"},

	"POST /v1/tokens":        {action: "token.create", kind: "token"},
	"DELETE /v1/tokens/{id}": {action: "token.revoke", kind: "token", object: pathParam("id")},

	"POST /v1/admin/invitations":        {action: "invitation.create", kind: "invitation"},
	"DELETE /v1/admin/invitations/{id}": {action: "invitation.revoke", kind: "invitation", object: pathParam("id")},
	"PATCH /v1/admin/users/{id}":        {action: "user.admin_update", kind: "user", object: pathParam("id")},

	"POST /v1/agents":              {action: "agent.register", kind: "agent"},
	"DELETE /v1/agents/{id}":       {action: "agent.retire", kind: "agent", object: pathParam("id")},
	"POST /v1/admin/agents":        {action: "agent.register", kind: "agent"},
	"DELETE /v1/admin/agents/{id}": {action: "agent.retire", kind: "agent", object: pathParam("id")},

	"POST /v1/targets":             {action: "target.create", kind: "target"},
	"POST /v1/targets/{id}/verify": {action: "target.verify", kind: "target", object: pathParam("id")},
	"DELETE /v1/targets/{id}":      {action: "target.delete", kind: "target", object: pathParam("id")},

	"POST /v1/tests/{id}/schedules": {action: "schedule.create", kind: "schedule"},
	"PATCH /v1/schedules/{id}":      {action: "schedule.update", kind: "schedule", object: pathParam("id")},
	"DELETE /v1/schedules/{id}":     {action: "schedule.delete", kind: "schedule", object: pathParam("id")},

	"POST /v1/notification-channels":           {action: "channel.create", kind: "notification_channel"},
	"PATCH /v1/notification-channels/{id}":     {action: "channel.update", kind: "notification_channel", object: pathParam("id")},
	"DELETE /v1/notification-channels/{id}":    {action: "channel.delete", kind: "notification_channel", object: pathParam("id")},
	"POST /v1/notification-channels/{id}/test": {action: "channel.test", kind: "notification_channel", object: pathParam("id")},

	"POST /v1/secrets":          {action: "secret.put", kind: "secret"},
	"DELETE /v1/secrets/{name}": {action: "secret.delete", kind: "secret", object: pathParam("name")},

	"DELETE /v1/tests/{id}":          {action: "test.delete", kind: "test", object: pathParam("id")},
	"PUT /v1/tests/{id}/baseline":    {action: "test.set_baseline", kind: "test", object: pathParam("id")},
	"DELETE /v1/tests/{id}/baseline": {action: "test.clear_baseline", kind: "test", object: pathParam("id")},

	"POST /v1/namespaces":                                  {action: "namespace.claim", kind: "namespace"},
	"POST /v1/admin/namespaces":                            {action: "namespace.reserve", kind: "namespace"},
	"POST /v1/namespaces/{namespace}/keys":                 {action: "namespace.add_key", kind: "namespace", object: pathParam("namespace")},
	"POST /v1/namespaces/{namespace}/keys/{key_id}/retire": {action: "namespace.retire_key", kind: "namespace", object: pathParam("namespace")},
	"PUT /v1/namespaces/{namespace}/owners/{user_id}":      {action: "namespace.add_owner", kind: "namespace", object: pathParam("namespace")},
	"DELETE /v1/namespaces/{namespace}/owners/{user_id}":   {action: "namespace.remove_owner", kind: "namespace", object: pathParam("namespace")},

	"POST /v1/plugins/{namespace}/{name}/versions":                         {action: "plugin.publish", kind: "plugin_version"},
	"POST /v1/plugins/{namespace}/{name}/versions/{version}/deprecate":     {action: "plugin.deprecate", kind: "plugin_version", object: pluginVersion},
	"POST /v1/admin/plugins/{namespace}/{name}/versions/{version}/approve": {action: "plugin.approve", kind: "plugin_version", object: pluginVersion},
	"POST /v1/admin/plugins/{namespace}/{name}/versions/{version}/reject":  {action: "plugin.reject", kind: "plugin_version", object: pluginVersion},
	"POST /v1/admin/plugins/{namespace}/{name}/versions/{version}/revoke":  {action: "plugin.revoke", kind: "plugin_version", object: pluginVersion},

	"POST /v1/projects":                                    {action: "project.create", kind: "project"},
	"PATCH /v1/projects/{id}":                              {action: "project.rename", kind: "project", object: pathParam("id")},
	"DELETE /v1/projects/{id}":                             {action: "project.delete", kind: "project", object: pathParam("id")},
	"PATCH /v1/projects/{id}/members/{user_id}":            {action: "project.set_role", kind: "project", object: pathParam("id")},
	"DELETE /v1/projects/{id}/members/{user_id}":           {action: "project.remove_member", kind: "project", object: pathParam("id")},
	"POST /v1/projects/{id}/invitations":                   {action: "project.invite", kind: "project", object: pathParam("id")},
	"DELETE /v1/projects/{id}/invitations/{invitation_id}": {action: "project.withdraw_invitation", kind: "project", object: pathParam("id")},
	"POST /v1/me/invitations/{id}/accept":                  {action: "project.accept_invitation", kind: "project"},
	"POST /v1/me/invitations/{id}/decline":                 {action: "project.decline_invitation", kind: "project"},

	"POST /v1/runs":             {action: "run.start", kind: "run"},
	"POST /v1/runs/{id}/cancel": {action: "run.cancel", kind: "run", object: pathParam("id")},
}

// record wraps an audited route's handler: the request carries a Note for the code serving it,
// and once it is answered, its entry is appended with who asked (as authorize learned it), from
// where, and the answer's status. A request refused before its handler (no credentials, a
// missing scope, not an admin) is recorded too.
func (s *server) record(key string, next http.Handler) http.Handler {
	rule, ok := audits[key]
	if !ok || s.audit == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, note := audit.WithNote(r.Context())
		r = r.WithContext(ctx)
		var object string
		var project *uuid.UUID
		if rule.object != nil {
			// Read before the request: one that deletes its object leaves nothing to ask after.
			object = rule.object(r)
			project = s.audit.ProjectOf(ctx, barrage.ObjectKind(rule.kind), object)
		}
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if r.Context().Err() != nil && rec.status == 0 {
			rec.status = statusClientClosed
		}
		e := barrage.AuditEvent{ActorKind: "anonymous", Action: rule.action, ObjectKind: rule.kind, ObjectID: object, ProjectID: project,
			Address: ClientIP(ctx).String(), Status: cmp.Or(rec.status, http.StatusOK), RequestID: requestIDFrom(ctx)}
		switch p, ok := PrincipalFrom(ctx); {
		case ok && p.Agent != nil:
			e.ActorKind, e.ActorID = "agent", &p.Agent.ID
		case ok:
			e.ActorKind, e.ActorID, e.ActorEmail, e.TokenID = "user", &p.User.ID, p.User.Email, p.TokenID
		}
		e.Outcome = barrage.AuditSuccess
		if e.Status >= http.StatusBadRequest {
			e.Outcome = barrage.AuditFailure
		}
		note.Fill(&e)
		if e.ProjectID != nil && e.Outcome == barrage.AuditFailure && e.ActorKind == "user" {
			// Only a member's entry names the project: an outsider's would tell them where the
			// object they were refused is.
			if p, ok := PrincipalFrom(ctx); ok && p.Memberships[*e.ProjectID].Role == "" {
				e.ProjectID = nil
			}
		}
		// The answer is sent: the entry is written even if the client has gone.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if e.ProjectID == nil && e.ObjectID != "" && e.Outcome == barrage.AuditSuccess {
			e.ProjectID = s.audit.ProjectOf(wctx, barrage.ObjectKind(e.ObjectKind), e.ObjectID) // what the request made
		}
		s.audit.Append(wctx, e)
	})
}

func (s *server) ListAuditEvents(ctx context.Context, req api.ListAuditEventsRequestObject) (api.ListAuditEventsResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	prm := req.Params
	f, err := auditFilter(p, prm.Project, prm.Actor, prm.Action, prm.ObjectKind, prm.ObjectId, (*string)(prm.Outcome), prm.Since, prm.Until)
	if err != nil {
		return nil, err
	}
	items, next, err := listPage(prm.Cursor, prm.Limit, func(before *uuid.UUID, limit int) (barrage.Page[barrage.AuditEvent], error) {
		f.Before, f.Limit = before, limit
		return s.audit.Events(ctx, p, f)
	}, toAPIAuditEvent)
	return api.ListAuditEvents200JSONResponse{Items: items, NextCursor: next}, err
}

// auditExportPage is how many entries an export reads at once.
const auditExportPage = 500

func (s *server) ExportAuditEvents(ctx context.Context, req api.ExportAuditEventsRequestObject) (api.ExportAuditEventsResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	prm := req.Params
	f, err := auditFilter(p, prm.Project, prm.Actor, prm.Action, prm.ObjectKind, prm.ObjectId, (*string)(prm.Outcome), prm.Since, prm.Until)
	if err != nil {
		return nil, err
	}
	f.Limit = auditExportPage
	page, err := s.audit.Events(ctx, p, f)
	if err != nil {
		return nil, err // before any byte: a database out of reach is a 503, not a short file
	}
	// Streamed a page at a time: a year of entries is never held.
	pr, pw := io.Pipe()
	go func() {
		enc := json.NewEncoder(pw)
		for {
			for _, e := range page.Items {
				if err := enc.Encode(toAPIAuditEvent(e)); err != nil {
					pw.CloseWithError(err)
					return
				}
			}
			if page.Next == nil {
				pw.Close()
				return
			}
			f.Before = page.Next
			if page, err = s.audit.Events(ctx, p, f); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return api.ExportAuditEvents200ApplicationxNdjsonResponse{Body: pr}, nil
}

// auditFilter reads the audit log's filters for p, which the contract has checked but for their
// order in time, their text, and a project p is not in (404, but for admins).
func auditFilter(p barrage.Principal, project, actor *uuid.UUID, action, kind, object, outcome *string, since, until *time.Time) (barrage.AuditFilter, error) {
	if project != nil && p.User.Role != barrage.RoleAdmin {
		if err := p.Need(*project, barrage.ProjectViewer); err != nil {
			return barrage.AuditFilter{}, err
		}
	}
	if since != nil && until != nil && since.After(*until) {
		return barrage.AuditFilter{}, &badParam{field: "since", reason: "must not be after until"}
	}
	for field, v := range map[string]*string{"action": action, "object_kind": kind, "object_id": object} {
		if v != nil && (!utf8.ValidString(*v) || strings.ContainsRune(*v, 0)) {
			return barrage.AuditFilter{}, &badParam{field: field, reason: "not text: invalid UTF-8 or a NUL"}
		}
	}
	return barrage.AuditFilter{Project: project, Actor: actor, Action: deref(action), ObjectKind: deref(kind), ObjectID: deref(object),
		Outcome: deref(outcome), Since: since, Until: until}, nil
}

func toAPIAuditEvent(e barrage.AuditEvent) api.AuditEvent {
	out := api.AuditEvent{Id: e.ID, At: e.At, Action: e.Action, Address: e.Address, Outcome: api.AuditEventOutcome(e.Outcome),
		Status: e.Status, Reason: ptrIf(e.Reason), RequestId: ptrIf(e.RequestID), SubjectId: e.SubjectID, ProjectId: e.ProjectID}
	out.Actor.Kind, out.Actor.Id, out.Actor.Email, out.Actor.TokenId = api.AuditEventActorKind(e.ActorKind), e.ActorID, ptrIf(e.ActorEmail), e.TokenID
	out.Object.Kind, out.Object.Id = e.ObjectKind, e.ObjectID
	if len(e.Detail) > 0 {
		out.Detail = &e.Detail
	}
	return out
}
