package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
)

// auditEntries reads every entry of the audit log query selects as bearer may, page by page.
func (b *testBundle) auditEntries(bearer string, query url.Values) []map[string]any {
	b.t.Helper()
	var out []map[string]any
	for {
		r := b.do("GET", "/v1/audit?"+query.Encode(), bearer, nil)
		require.Equal(b.t, http.StatusOK, r.status, "body: %s", r.body)
		page := r.json(b.t)
		for _, e := range page["items"].([]any) {
			out = append(out, e.(map[string]any))
		}
		next, ok := page["next_cursor"].(string)
		if !ok {
			return out
		}
		query.Set("cursor", next)
	}
}

// entry returns the one entry of entries with action (and outcome, when given), failing when
// there is not exactly one.
func entry(t *testing.T, entries []map[string]any, action string, outcome ...string) map[string]any {
	t.Helper()
	var found []map[string]any
	for _, e := range entries {
		if e["action"] == action && (len(outcome) == 0 || e["outcome"] == outcome[0]) {
			found = append(found, e)
		}
	}
	require.Len(t, found, 1, "entries with action %s in %v", action, entries)
	return found[0]
}

// The audit log records who did what to which object, from where, with what outcome: sign-ins
// that failed (read by the account's owner too), tokens, password changes, secrets (never their
// values), a route refused to a user, an admin's change of a user; an admin reads it all, a user
// what they did and what concerns them; filters, pages and the export agree.
func TestTheAuditLogRecordsWhoDidWhat(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{trusted: "127.0.0.1/32"})
	admin, u := b.adminAndUser()

	r := b.do("POST", "/v1/auth/login", "", map[string]any{"email": u.email, "password": "not the password at all"},
		"X-Forwarded-For", "203.0.113.7")
	requireProblem(t, r, http.StatusUnauthorized)

	r = b.do("POST", "/v1/tokens", u.access, map[string]any{"name": "ci", "scopes": []string{"read"}})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	tok := r.json(t)
	token := secret(tok["token"].(string))
	require.Equal(t, http.StatusNoContent, b.do("DELETE", "/v1/tokens/"+tok["id"].(string), u.access, nil).status)

	const value = "the secret value 0xC0FFEE"
	r = b.do("POST", "/v1/secrets", u.access, map[string]any{"name": "API_KEY", "value": secret(value)})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)

	requireProblem(t, b.do("POST", "/v1/admin/invitations", u.access, map[string]any{}), http.StatusForbidden)

	newPassword := secret("a new password for the user")
	r = b.do("PATCH", "/v1/me", u.access, map[string]any{"current_password": u.password, "new_password": newPassword})
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	r = b.do("POST", "/v1/auth/login", "", map[string]any{"email": u.email, "password": newPassword})
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	u.access = secret(r.json(t)["access_token"].(string))

	// The user reads what they did and what concerns them; not the admin's invitations.
	mine := b.auditEntries(u.access, url.Values{})
	for _, e := range mine {
		actor := e["actor"].(map[string]any)
		require.True(t, actor["id"] == u.id || e["subject_id"] == u.id, "the user reads an entry of someone else: %v", e)
	}
	failed := entry(t, mine, "auth.login", "failure")
	require.EqualValues(t, http.StatusUnauthorized, failed["status"])
	require.Equal(t, "203.0.113.7", failed["address"])
	require.Equal(t, u.id, failed["subject_id"])
	require.Equal(t, map[string]any{"kind": "anonymous", "email": u.email}, failed["actor"])
	require.Contains(t, failed["reason"], "invalid email or password")
	require.Equal(t, map[string]any{"kind": "user", "id": u.id}, failed["object"])

	created := entry(t, mine, "token.create")
	require.Equal(t, "success", created["outcome"])
	require.Equal(t, map[string]any{"kind": "token", "id": tok["id"]}, created["object"])
	require.Equal(t, map[string]any{"name": "ci", "scopes": []any{"read"}}, created["detail"])
	require.Equal(t, tok["id"], entry(t, mine, "token.revoke")["object"].(map[string]any)["id"])
	put := entry(t, mine, "secret.put")
	require.Equal(t, "API_KEY", put["object"].(map[string]any)["id"])
	password := entry(t, mine, "user.change_password")
	require.Equal(t, map[string]any{"fields": []any{"password"}, "revoke_tokens": false}, password["detail"])
	refused := entry(t, mine, "invitation.create")
	require.Equal(t, "failure", refused["outcome"])
	require.EqualValues(t, http.StatusForbidden, refused["status"])
	require.Equal(t, "this route is for admins", refused["reason"])
	require.Equal(t, u.id, entry(t, mine, "invitation.use")["actor"].(map[string]any)["id"], "the user's sign-up")
	require.Len(t, b.auditEntries(u.access, url.Values{"action": {"auth.login"}, "outcome": {"success"}}), 2, "signed in at sign-up and after the change")

	// The admin disables the user: the user's log says so, and who.
	r = b.do("PATCH", "/v1/admin/users/"+u.id, admin.access, map[string]any{"disabled": true})
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	all := b.auditEntries(admin.access, url.Values{"limit": {"2"}})
	disabled := entry(t, all, "user.admin_update")
	require.Equal(t, admin.id, disabled["actor"].(map[string]any)["id"])
	require.Equal(t, u.id, disabled["subject_id"])
	require.Equal(t, map[string]any{"disabled": true}, disabled["detail"])
	require.Len(t, b.auditEntries(admin.access, url.Values{"action": {"token"}}), 2, "the token's two")
	require.Len(t, b.auditEntries(admin.access, url.Values{"outcome": {"failure"}}), 2, "the wrong password and the refused route")
	require.Len(t, b.auditEntries(admin.access, url.Values{"actor": {admin.id}, "action": {"user.admin_update"}}), 1)
	require.Len(t, b.auditEntries(admin.access, url.Values{"object_kind": {"secret"}, "object_id": {"API_KEY"}}), 1)
	require.Empty(t, b.auditEntries(admin.access, url.Values{"since": {time.Now().Add(time.Hour).Format(time.RFC3339)}}))
	for i := 1; i < len(all); i++ {
		require.Greater(t, all[i-1]["id"], all[i]["id"], "newest first")
	}
	p := requireProblem(t, b.do("GET", "/v1/audit?since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z", admin.access, nil), http.StatusBadRequest)
	requireField(t, p, "since")

	// The export holds every entry the list does, a line each, and no secret's value.
	r = b.do("GET", "/v1/audit/export", admin.access, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.Equal(t, "application/x-ndjson", r.header.Get("Content-Type"))
	require.NotContains(t, string(r.body), value)
	require.NotContains(t, string(r.body), token)
	lines := 0
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	for sc.Scan() {
		var e map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e))
		require.Equal(t, all[lines]["id"], e["id"])
		lines++
	}
	require.Equal(t, len(all), lines)
}

// Nothing changes or deletes an entry, whoever connects to the database, but the retention,
// which deletes the entries past it and no other.
func TestTheAuditLogIsAppendOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	old := barrage.AuditEvent{ID: uuid.Must(uuid.NewV7()), At: time.Now().Add(-500 * 24 * time.Hour), ActorKind: "anonymous",
		Action: "auth.login", ObjectKind: "user", Outcome: barrage.AuditFailure, Status: http.StatusUnauthorized}
	require.NoError(t, b.store.AppendAudit(ctx, old))
	recent := old
	recent.ID, recent.At = uuid.Must(uuid.NewV7()), time.Now().Add(-399*24*time.Hour)
	require.NoError(t, b.store.AppendAudit(ctx, recent))

	for _, sql := range []string{
		"UPDATE audit_events SET outcome = 'success'",
		"DELETE FROM audit_events",
		"TRUNCATE audit_events",
		// A retention named by hand reaches only entries past it, and 0 days is not one.
		"BEGIN; SET LOCAL barrage.audit_retention = '1 second'; UPDATE audit_events SET reason = 'x'; COMMIT",
	} {
		conn, err := b.pool.Acquire(ctx)
		require.NoError(t, err)
		_, err = conn.Exec(ctx, sql)
		require.ErrorContains(t, err, "append-only", sql)
		_, err = conn.Exec(ctx, "ROLLBACK") // the transaction the last one left open, failed
		require.NoError(t, err)
		conn.Release()
	}
	n, err := b.store.PruneAudit(ctx, 400*24*time.Hour)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	left, err := b.store.AuditEvents(ctx, barrage.AuditFilter{Limit: 10})
	require.NoError(t, err)
	require.Len(t, left, 1)
	require.Equal(t, recent.ID, left[0].ID)
	require.Equal(t, "failure", left[0].Outcome)
}
