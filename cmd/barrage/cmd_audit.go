package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/quantity"
)

// runAudit prints the audit log as the caller may read it: a table, or every entry as JSON lines.
func runAudit(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "audit", "[--action token] [--actor USER_ID] [--object-kind run] [--object ID] [--outcome failure] [--since 24h] [--until T] [--project P] [--json-lines]")
	action := fs.String("action", "", "an action (token.create), or every action on a kind of object (token)")
	actor := fs.String("actor", "", "only what this user (id) did")
	kind := fs.String("object-kind", "", "only the entries on this kind of object: user, token, invitation, agent, target, secret, test, namespace, plugin_version, run, project")
	inProj := projectFlag(fs)
	object := fs.String("object", "", "only the entries on this object: its id, a secret's name, namespace/name@version")
	outcome := fs.String("outcome", "", "success or failure")
	since := fs.String("since", "", "from this instant (RFC 3339) or this long ago (24h)")
	until := fs.String("until", "", "before this instant (RFC 3339) or this long ago")
	lines := fs.Bool("json-lines", false, "print every entry as one JSON object a line (the export), for a file or jq")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	p := api.ExportAuditEventsParams{Action: nonEmpty(*action), ObjectKind: nonEmpty(*kind), ObjectId: nonEmpty(*object)}
	if *actor != "" {
		id, err := uuid.Parse(*actor)
		if err != nil {
			return fmt.Errorf("--actor: %q is not a user id", *actor)
		}
		p.Actor = &id
	}
	if *outcome != "" {
		o := api.ExportAuditEventsParamsOutcome(*outcome)
		p.Outcome = &o
	}
	var err error
	if p.Since, err = instant("since", *since); err != nil {
		return err
	}
	if p.Until, err = instant("until", *until); err != nil {
		return err
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	if p.Project, err = inProj.named(ctx, cl); err != nil {
		return err
	}
	if *lines {
		stream, _, err := apiClientWith(ctx, e, true, &http.Client{}) // an export takes as long as it takes
		if err != nil {
			return err
		}
		res, err := stream.ExportAuditEvents(ctx, &p)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(res.Body)
			return api.ProblemError(res, body)
		}
		_, err = io.Copy(e.stdout, res.Body)
		return err
	}
	list := api.ListAuditEventsParams{Project: p.Project, Actor: p.Actor, Action: p.Action, ObjectKind: p.ObjectKind, ObjectId: p.ObjectId,
		Outcome: (*api.ListAuditEventsParamsOutcome)(p.Outcome), Since: p.Since, Until: p.Until}
	return printTable(e, "TIME\tACTOR\tACTION\tOBJECT\tADDRESS\tOUTCOME", func(cursor *string) ([]api.AuditEvent, *string, error) {
		list.Cursor = cursor
		res, err := cl.ListAuditEventsWithResponse(ctx, &list)
		if err != nil {
			return nil, nil, err
		}
		if res.JSON200 == nil {
			return nil, nil, api.ProblemError(res.HTTPResponse, res.Body)
		}
		return res.JSON200.Items, res.JSON200.NextCursor, nil
	}, auditRow)
}

// auditRow is an entry's row: the actor by email (or kind), the object as kind:id, and a
// failure's status and reason.
func auditRow(a api.AuditEvent) string {
	actor := cmp.Or(deref(a.Actor.Email), string(a.Actor.Kind))
	if a.Actor.Kind == api.AuditEventActorKindAnonymous {
		actor = "(anonymous) " + actor
	}
	object := a.Object.Kind
	if a.Object.Id != "" {
		object += ":" + a.Object.Id
	}
	outcome := string(a.Outcome)
	if a.Outcome == api.AuditEventOutcomeFailure {
		outcome = fmt.Sprintf("failure %d %s", a.Status, deref(a.Reason))
	}
	cells := []string{a.At.Local().Format(time.RFC3339), actor, a.Action, object, a.Address, outcome}
	for i, c := range cells {
		// What users typed (an email tried, a reason) stays in its column and paints nothing.
		cells[i] = terminalText(strings.NewReplacer("\t", " ", "\n", " ").Replace(c))
	}
	return strings.Join(cells, "\t")
}

// nonEmpty is s as an optional parameter: "" is none.
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// instant reads a flag's time: an RFC 3339 instant, or a duration ago; "" is none.
func instant(flag, s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return &t, nil
	}
	d, err := quantity.ParseDuration(s)
	if err != nil || d < 0 {
		return nil, fmt.Errorf("--%s: want an instant such as 2026-01-31T00:00:00Z, or how long ago, such as 24h", flag)
	}
	t := time.Now().Add(-d)
	return &t, nil
}
