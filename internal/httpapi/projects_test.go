package httpapi_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

// A project's life: made by its owner, who invites by email and by id; an invitation is its
// invitee's alone to answer; roles change, the last owner stays; a member removed reaches
// nothing of it at their next request while what they started stays, named; a token limited to
// the project reaches nothing else; a personal project is neither left nor deleted, a project
// with a run going on is not deleted; and the audit log tells each step with its actor.
func TestProjectsWithMembersAndRoles(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, owner := b.adminAndUser()
	newUser := func(email string) user {
		return b.signup(b.invite(admin, map[string]any{"license": map[string]any{"template": "demo"}}), email)
	}
	ed, vi, eve := newUser("ed@example.com"), newUser("vi@example.com"), newUser("eve@example.com")

	r := b.do("GET", "/v1/projects", owner.access, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	items := r.json(t)["items"].([]any)
	require.Len(t, items, 1)
	home := items[0].(map[string]any)
	require.Equal(t, true, home["personal"])
	require.Equal(t, "owner", home["role"])

	r = b.do("POST", "/v1/projects", owner.access, map[string]any{"name": "Shop team"})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	p := r.json(t)["id"].(string)

	// Invitations: by email (case aside) and by id; unknown email, a member, twice: refused.
	r = b.do("POST", "/v1/projects/"+p+"/invitations", owner.access, map[string]any{"email": "ED@example.com", "role": "editor"})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	edInv := r.json(t)
	require.Equal(t, "Shop team", edInv["project_name"])
	require.Equal(t, ed.id, edInv["user_id"])
	r = b.do("POST", "/v1/projects/"+p+"/invitations", owner.access, map[string]any{"user_id": vi.id, "role": "viewer"})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	viInv := r.json(t)["id"].(string)
	requireField(t, requireProblem(t, b.do("POST", "/v1/projects/"+p+"/invitations", owner.access,
		map[string]any{"email": "nobody@example.com", "role": "viewer"}), http.StatusUnprocessableEntity), "email")
	requireField(t, requireProblem(t, b.do("POST", "/v1/projects/"+p+"/invitations", owner.access,
		map[string]any{"email": "vi@example.com", "user_id": vi.id, "role": "viewer"}), http.StatusUnprocessableEntity), "email")
	requireProblem(t, b.do("POST", "/v1/projects/"+p+"/invitations", owner.access, map[string]any{"user_id": vi.id, "role": "owner"}), http.StatusConflict)
	requireProblem(t, b.do("POST", "/v1/projects/"+p+"/invitations", owner.access, map[string]any{"user_id": owner.id, "role": "viewer"}), http.StatusConflict)

	// Each answers their own; another's invitation is not found to them.
	r = b.do("GET", "/v1/me/invitations", ed.access, nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Len(t, r.json(t)["items"], 1)
	requireProblem(t, b.do("POST", "/v1/me/invitations/"+viInv+"/accept", eve.access, nil), http.StatusNotFound)
	requireProblem(t, b.do("POST", "/v1/me/invitations/"+viInv+"/accept", ed.access, nil), http.StatusNotFound)
	requireProblem(t, b.do("GET", "/v1/tests?project="+p, ed.access, nil), http.StatusNotFound)
	r = b.do("POST", "/v1/me/invitations/"+edInv["id"].(string)+"/accept", ed.access, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.Equal(t, "editor", r.json(t)["role"])
	requireProblem(t, b.do("POST", "/v1/me/invitations/"+edInv["id"].(string)+"/accept", ed.access, nil), http.StatusNotFound)
	require.Equal(t, http.StatusOK, b.do("POST", "/v1/me/invitations/"+viInv+"/accept", vi.access, nil).status)

	// The editor works in the project; the owner sees it.
	r = b.do("POST", "/v1/tests?project="+p, ed.access, smokeScript, "Content-Type", "application/yaml")
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	test := r.json(t)["id"].(string)
	r = b.do("GET", "/v1/tests", owner.access, nil)
	require.Contains(t, string(r.body), test, "a list reads every project of the reader's")
	r = b.do("GET", "/v1/tests?project="+home["id"].(string), owner.access, nil)
	require.NotContains(t, string(r.body), test, "and one project's when asked")

	// A personal project is its user's alone: nobody is invited to it, so nobody takes it over.
	requireProblem(t, b.do("POST", "/v1/projects/"+home["id"].(string)+"/invitations", owner.access,
		map[string]any{"user_id": eve.id, "role": "owner"}), http.StatusConflict)

	// An editor's agent is retired with his role; an owner's invitations go when he is one no more.
	r = b.do("POST", "/v1/agents?project="+p, ed.access, map[string]any{"name": "ed's machine"})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	edAgent := r.json(t)["id"].(string)
	require.Equal(t, http.StatusOK, b.do("PATCH", "/v1/projects/"+p+"/members/"+ed.id, owner.access, map[string]any{"role": "owner"}).status)
	r = b.do("POST", "/v1/projects/"+p+"/invitations", ed.access, map[string]any{"user_id": eve.id, "role": "owner"})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	eveInv := r.json(t)["id"].(string)
	require.Equal(t, http.StatusOK, b.do("PATCH", "/v1/projects/"+p+"/members/"+ed.id, owner.access, map[string]any{"role": "viewer"}).status)
	requireProblem(t, b.do("POST", "/v1/me/invitations/"+eveInv+"/accept", eve.access, nil), http.StatusNotFound)
	requireProblem(t, b.do("GET", "/v1/agents/"+edAgent, owner.access, nil), http.StatusNotFound)
	require.Equal(t, http.StatusOK, b.do("PATCH", "/v1/projects/"+p+"/members/"+ed.id, owner.access, map[string]any{"role": "editor"}).status)

	// Roles change; the last owner stays.
	r = b.do("PATCH", "/v1/projects/"+p+"/members/"+owner.id, owner.access, map[string]any{"role": "editor"})
	requireProblem(t, r, http.StatusConflict)
	r = b.do("PATCH", "/v1/projects/"+p+"/members/"+vi.id, owner.access, map[string]any{"role": "runner"})
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	requireProblem(t, b.do("DELETE", "/v1/projects/"+p+"/members/"+owner.id, owner.access, nil), http.StatusConflict)

	// A token limited to the project reaches it alone, and what it makes goes there.
	r = b.do("POST", "/v1/tokens", ed.access, map[string]any{"name": "team ci", "scopes": []string{"read", "write"}, "project_id": p})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	require.Equal(t, p, r.json(t)["project_id"])
	ci := secret(r.json(t)["token"].(string))
	r = b.do("POST", "/v1/tests", ci, smokeScript, "Content-Type", "application/yaml")
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	require.Equal(t, p, r.json(t)["project_id"])
	r = b.do("GET", "/v1/projects", ci, nil)
	require.Len(t, r.json(t)["items"], 1)
	edHome := ""
	r = b.do("GET", "/v1/projects", ed.access, nil)
	for _, it := range r.json(t)["items"].([]any) {
		if it.(map[string]any)["personal"] == true {
			edHome = it.(map[string]any)["id"].(string)
		}
	}
	requireProblem(t, b.do("GET", "/v1/tests?project="+edHome, ci, nil), http.StatusNotFound)
	requireField(t, requireProblem(t, b.do("POST", "/v1/tokens", ed.access, map[string]any{"name": "x", "scopes": []string{"read"}, "project_id": edInv["id"]}),
		http.StatusUnprocessableEntity), "project_id")
	requireField(t, requireProblem(t, b.do("POST", "/v1/tokens", admin.access, map[string]any{"name": "x", "scopes": []string{"read", "admin"},
		"project_id": home["id"]}), http.StatusUnprocessableEntity), "project_id")
	// Limited to a project, it manages neither the account nor its tokens.
	requireProblem(t, b.do("GET", "/v1/tokens", ci, nil), http.StatusForbidden)
	requireProblem(t, b.do("PATCH", "/v1/me", ci, map[string]any{"name": "taken"}), http.StatusForbidden)

	// Removed, the editor reaches nothing of the project at once; the test stays, its maker named.
	require.Equal(t, http.StatusNoContent, b.do("DELETE", "/v1/projects/"+p+"/members/"+ed.id, owner.access, nil).status)
	requireProblem(t, b.do("GET", "/v1/tests/"+test, ed.access, nil), http.StatusNotFound)
	requireProblem(t, b.do("GET", "/v1/tests/"+test, ci, nil), http.StatusNotFound)
	require.Equal(t, http.StatusOK, b.do("GET", "/v1/tests/"+test, vi.access, nil).status)

	// A member leaves; a personal project is neither left nor deleted.
	require.Equal(t, http.StatusNoContent, b.do("DELETE", "/v1/projects/"+p+"/members/"+vi.id, vi.access, nil).status)
	requireProblem(t, b.do("DELETE", "/v1/projects/"+home["id"].(string)+"/members/"+owner.id, owner.access, nil), http.StatusConflict)
	requireProblem(t, b.do("DELETE", "/v1/projects/"+home["id"].(string), owner.access, nil), http.StatusConflict)

	// The owner's log tells each step with its actor; Ed's tells what he did and what was done
	// to him.
	entries := b.auditEntries(admin.access, url.Values{"action": {"project"}, "outcome": {"success"}})
	actors := map[string][]string{}
	for _, e := range entries {
		a := e["action"].(string)
		actors[a] = append(actors[a], e["actor"].(map[string]any)["id"].(string))
	}
	require.Equal(t, map[string][]string{
		"project.create":            {owner.id},
		"project.invite":            {ed.id, owner.id, owner.id}, // Ed invited Eve while an owner
		"project.accept_invitation": {vi.id, ed.id},
		"project.set_role":          {owner.id, owner.id, owner.id, owner.id},
		"project.remove_member":     {vi.id, owner.id}, // Vi left; the owner removed Ed before
	}, actors)
	// The owner reads the project's part: what members did there too.
	accepted := b.auditEntries(owner.access, url.Values{"project": {p}, "action": {"project.accept_invitation"}})
	require.Len(t, accepted, 2, "both members' acceptances, in the project the owner owns")
	requireProblem(t, b.do("GET", "/v1/audit?project="+p, eve.access, nil), http.StatusNotFound)
	removed := b.auditEntries(ed.access, url.Values{"action": {"project.remove_member"}})
	require.Len(t, removed, 1, "the removal concerns Ed: he reads it")

	// The project is deleted, with what it held.
	require.Equal(t, http.StatusNoContent, b.do("DELETE", "/v1/projects/"+p, owner.access, nil).status)
	requireProblem(t, b.do("GET", "/v1/tests/"+test, owner.access, nil), http.StatusNotFound)
	requireProblem(t, b.do("GET", "/v1/projects/"+p, owner.access, nil), http.StatusNotFound)
}
