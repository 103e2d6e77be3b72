package httpapi_test

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/api"
)

// tenancyRoute says how the tenancy matrix calls a route that reaches a project's objects: the
// path with the project's objects' ids in it, the body, and the least role that may call it.
// noCall marks a route whose allowed call waits on an agent or streams: only its refusals are
// called.
type tenancyRoute struct {
	path   string
	body   any
	min    string
	noCall bool
}

// notProjectScoped are the contract's routes that reach nothing of a project, by why; a route in
// neither this list nor the matrix fails TestEveryProjectRouteIsScopedAndRoleChecked.
var notProjectScoped = map[string]string{
	"account":     "GET /v1/me, PATCH /v1/me, GET /v1/me/license, GET /v1/tokens, POST /v1/tokens, DELETE /v1/tokens/{id}, GET /v1/me/invitations",
	"auth":        "POST /v1/auth/signup, POST /v1/auth/login, POST /v1/auth/refresh, POST /v1/auth/logout, POST /v1/auth/session, POST /v1/auth/session/refresh, DELETE /v1/auth/session",
	"service":     "GET /healthz, GET /readyz, GET /openapi.yaml, GET /docs",
	"projects":    "GET /v1/projects, POST /v1/projects",
	"lists":       "GET /v1/tests, GET /v1/runs, GET /v1/agents, GET /v1/secrets, GET /v1/targets, GET /v1/notification-channels, GET /v1/schedules, POST /v1/tests/check",
	"audit":       "GET /v1/audit, GET /v1/audit/export",
	"marketplace": "GET /v1/namespaces, POST /v1/namespaces, GET /v1/namespaces/{namespace}, POST /v1/namespaces/{namespace}/keys, POST /v1/namespaces/{namespace}/keys/{key_id}/retire, PUT /v1/namespaces/{namespace}/owners/{user_id}, DELETE /v1/namespaces/{namespace}/owners/{user_id}, GET /v1/plugins, GET /v1/plugins/{namespace}/{name}, POST /v1/plugins/{namespace}/{name}/versions, GET /v1/plugins/{namespace}/{name}/versions/{version}, POST /v1/plugins/{namespace}/{name}/versions/{version}/deprecate, GET /v1/plugins/{namespace}/{name}/versions/{version}/download/{os}/{arch}, GET /v1/plugins/{namespace}/{name}/versions/{version}/download/{os}/{arch}/file",
	"admin":       "every /v1/admin/ route: admins only, whatever the project",
	"agents":      "every /v1/agent/ route: an agent's, scoped by its lease and jobs",
	"an invitation is its invitee's alone (TestProjectsWithMembersAndRoles)": "POST /v1/me/invitations/{id}/accept, POST /v1/me/invitations/{id}/decline",
}

// exempt reports whether route is in notProjectScoped.
func exempt(route string) bool {
	method, path, _ := strings.Cut(route, " ")
	if strings.HasPrefix(path, "/v1/admin/") || strings.HasPrefix(path, "/v1/agent/") {
		return true
	}
	for _, routes := range notProjectScoped {
		for _, r := range strings.Split(routes, ", ") {
			if r == method+" "+path {
				return true
			}
		}
	}
	return false
}

// Every route of the contract that reaches a project's objects, by their ids or by ?project=,
// answers a user outside the project 404 and a member whose role is too small 403 naming the
// role it takes, and changes nothing; a viewer reads what viewers may. The matrix is checked
// against the contract: a route added to it is covered here, or listed as no project's, or
// this test fails naming it.
func TestEveryProjectRouteIsScopedAndRoleChecked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, owner := b.adminAndUser()
	member := func(email, role string, project string) user {
		u := b.signup(b.invite(admin, map[string]any{"license": map[string]any{"template": "demo"}}), email)
		r := b.do("POST", "/v1/projects/"+project+"/invitations", owner.access, map[string]any{"email": u.email, "role": role})
		require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
		r = b.do("POST", "/v1/me/invitations/"+r.json(t)["id"].(string)+"/accept", u.access, nil)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		return u
	}
	r := b.do("POST", "/v1/projects", owner.access, map[string]any{"name": "shop team"})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	p := r.json(t)["id"].(string)
	in := "?project=" + p
	viewer, runner, editor := member("viewer@example.com", "viewer", p), member("runner@example.com", "runner", p), member("editor@example.com", "editor", p)
	outsider := b.signup(b.invite(admin, map[string]any{"license": map[string]any{"template": "demo"}}), "outsider@example.com")

	// What the project holds: a test with a file, a script, a run on its private agent, a target,
	// a secret, and an invitation waiting.
	r = b.do("POST", "/v1/tests"+in, editor.access, smokeScript, "Content-Type", "application/yaml")
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	test := r.json(t)["id"].(string)
	require.Equal(t, p, r.json(t)["project_id"])
	r = b.do("PUT", "/v1/tests/"+test+"/files/users.csv", editor.access, "name\nada\n", "Content-Type", "application/octet-stream")
	require.Less(t, r.status, 300, "body: %s", r.body)
	r = b.do("POST", "/v1/scripts"+in, editor.access, map[string]any{"source": smokeScript})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	script := r.json(t)["id"].(string)
	agent, token := b.registerAgent("/v1/agents"+in, editor.access, "team agent", nil)
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", token, hello).status)
	r = b.do("POST", "/v1/runs", runner.access, map[string]any{"script_id": script, "agent_ids": []string{agent}})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	run := r.json(t)["id"].(string)
	require.Equal(t, p, r.json(t)["project_id"])
	require.Equal(t, runner.id, r.json(t)["started_by"], "the run counts against the runner's license")
	r = b.do("POST", "/v1/targets"+in, editor.access, map[string]any{"url": "http://127.0.0.1:9"})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	target := r.json(t)["id"].(string)
	r = b.do("POST", "/v1/secrets"+in, editor.access, map[string]any{"name": "API_KEY", "value": secret("the team's key 42")})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	r = b.do("POST", "/v1/notification-channels"+in, editor.access, map[string]any{"name": "team hook", "kind": "webhook", "url": "https://hooks.example.com/barrage"})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	channel := r.json(t)["id"].(string)
	r = b.do("POST", "/v1/tests/"+test+"/schedules", runner.access, map[string]any{"cron": "0 2 * * *", "time_zone": "Europe/Zurich"})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	schedule := r.json(t)["id"].(string)
	waiting := b.signup(b.invite(admin, map[string]any{"license": map[string]any{"template": "demo"}}), "waiting@example.com")
	r = b.do("POST", "/v1/projects/"+p+"/invitations", owner.access, map[string]any{"user_id": waiting.id, "role": "viewer"})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	invitation := r.json(t)["id"].(string)

	matrix := map[string]tenancyRoute{
		"GET /v1/tests/{id}":                 {path: "/v1/tests/" + test, min: "viewer"},
		"PATCH /v1/tests/{id}":               {path: "/v1/tests/" + test, body: smokeScript, min: "editor"},
		"DELETE /v1/tests/{id}":              {path: "/v1/tests/" + test, min: "editor"},
		"GET /v1/tests/{id}/revisions":       {path: "/v1/tests/" + test + "/revisions", min: "viewer"},
		"GET /v1/tests/{id}/revisions/{rev}": {path: "/v1/tests/" + test + "/revisions/1", min: "viewer"},
		"PUT /v1/tests/{id}/files/{name}":    {path: "/v1/tests/" + test + "/files/users.csv", body: "name\neve\n", min: "editor"},
		"GET /v1/tests/{id}/files/{name}":    {path: "/v1/tests/" + test + "/files/users.csv", min: "viewer"},
		"DELETE /v1/tests/{id}/files/{name}": {path: "/v1/tests/" + test + "/files/users.csv", min: "editor"},
		"POST /v1/tests/{id}/debug":          {path: "/v1/tests/" + test + "/debug", body: map[string]any{}, min: "runner", noCall: true},
		"POST /v1/tests/{id}/scripts":        {path: "/v1/tests/" + test + "/scripts", body: map[string]any{}, min: "runner", noCall: true},
		"POST /v1/tests":                     {path: "/v1/tests" + in, body: smokeScript, min: "editor"},
		"POST /v1/tests/import":              {path: "/v1/tests/import" + in, body: map[string]any{"log": map[string]any{"entries": []any{}}}, min: "editor"},
		"POST /v1/scripts":                   {path: "/v1/scripts" + in, body: map[string]any{"source": smokeScript}, min: "editor"},
		"GET /v1/scripts/{id}":               {path: "/v1/scripts/" + script, min: "viewer"},
		"POST /v1/runs":                      {path: "/v1/runs", body: map[string]any{"script_id": script, "agent_ids": []string{agent}}, min: "runner", noCall: true},
		"GET /v1/runs/{id}":                  {path: "/v1/runs/" + run, min: "viewer"},
		"POST /v1/runs/{id}/cancel":          {path: "/v1/runs/" + run + "/cancel", min: "runner"},
		"GET /v1/runs/{id}/compare":          {path: "/v1/runs/" + run + "/compare?base=" + run, min: "viewer"},
		"GET /v1/runs/{id}/series.csv":       {path: "/v1/runs/" + run + "/series.csv", min: "viewer"},
		"GET /v1/runs/{id}/report":           {path: "/v1/runs/" + run + "/report", min: "viewer"},
		"GET /v1/runs/{id}/sweep":            {path: "/v1/runs/" + run + "/sweep", min: "viewer", noCall: true},
		"GET /v1/runs/{id}/sweep.csv":        {path: "/v1/runs/" + run + "/sweep.csv", min: "viewer", noCall: true},
		"GET /v1/runs/{id}/sweep.html":       {path: "/v1/runs/" + run + "/sweep.html", min: "viewer", noCall: true},
		"GET /v1/runs/{id}/summary.csv":      {path: "/v1/runs/" + run + "/summary.csv", min: "viewer"},
		"GET /v1/runs/{id}/junit.xml":        {path: "/v1/runs/" + run + "/junit.xml", min: "viewer"},
		"GET /v1/tests/{id}/trend":           {path: "/v1/tests/" + test + "/trend", min: "viewer"},
		"PUT /v1/tests/{id}/baseline":        {path: "/v1/tests/" + test + "/baseline", body: map[string]any{"run_id": run}, min: "editor"},
		"DELETE /v1/tests/{id}/baseline":     {path: "/v1/tests/" + test + "/baseline", min: "editor"},
		"GET /v1/runs/{id}/live":             {path: "/v1/runs/" + run + "/live", min: "viewer", noCall: true},
		"GET /v1/runs/{id}/series":           {path: "/v1/runs/" + run + "/series", min: "viewer"},
		"GET /v1/runs/{id}/summary":          {path: "/v1/runs/" + run + "/summary", min: "viewer"},
		"GET /v1/targets/{id}":               {path: "/v1/targets/" + target, min: "viewer"},
		"DELETE /v1/targets/{id}":            {path: "/v1/targets/" + target, min: "editor"},
		"POST /v1/targets/{id}/verify":       {path: "/v1/targets/" + target + "/verify", min: "editor"},
		"POST /v1/targets":                   {path: "/v1/targets" + in, body: map[string]any{"url": "http://127.0.0.1:10"}, min: "editor"},
		"GET /v1/agents/{id}":                {path: "/v1/agents/" + agent, min: "viewer"},
		"DELETE /v1/agents/{id}":             {path: "/v1/agents/" + agent, min: "editor"},
		"POST /v1/agents/{id}/ping":          {path: "/v1/agents/" + agent + "/ping", min: "viewer", noCall: true},
		"POST /v1/agents":                    {path: "/v1/agents" + in, body: map[string]any{"name": "another"}, min: "editor"},
		"POST /v1/secrets":                   {path: "/v1/secrets" + in, body: map[string]any{"name": "OTHER", "value": "a value of it"}, min: "editor"},
		"DELETE /v1/secrets/{name}":          {path: "/v1/secrets/API_KEY" + in, min: "editor"},

		"POST /v1/tests/{id}/schedules":  {path: "/v1/tests/" + test + "/schedules", body: map[string]any{"every": "1h"}, min: "runner"},
		"GET /v1/schedules/{id}":         {path: "/v1/schedules/" + schedule, min: "viewer"},
		"PATCH /v1/schedules/{id}":       {path: "/v1/schedules/" + schedule, body: map[string]any{"paused": true}, min: "runner"},
		"DELETE /v1/schedules/{id}":      {path: "/v1/schedules/" + schedule, min: "runner"},
		"GET /v1/schedules/{id}/firings": {path: "/v1/schedules/" + schedule + "/firings", min: "viewer"},

		"GET /v1/notification-channels/{id}":            {path: "/v1/notification-channels/" + channel, min: "viewer"},
		"PATCH /v1/notification-channels/{id}":          {path: "/v1/notification-channels/" + channel, body: map[string]any{"paused": true}, min: "editor"},
		"DELETE /v1/notification-channels/{id}":         {path: "/v1/notification-channels/" + channel, min: "editor"},
		"POST /v1/notification-channels/{id}/test":      {path: "/v1/notification-channels/" + channel + "/test", min: "editor"},
		"GET /v1/notification-channels/{id}/deliveries": {path: "/v1/notification-channels/" + channel + "/deliveries", min: "viewer"},
		"POST /v1/notification-channels":                {path: "/v1/notification-channels" + in, body: map[string]any{"name": "another", "kind": "slack", "url": "https://hooks.slack.com/services/T/B/x"}, min: "editor"},

		"GET /v1/projects/{id}":                                {path: "/v1/projects/" + p, min: "viewer"},
		"PATCH /v1/projects/{id}":                              {path: "/v1/projects/" + p, body: map[string]any{"name": "taken over"}, min: "owner"},
		"DELETE /v1/projects/{id}":                             {path: "/v1/projects/" + p, min: "owner"},
		"PATCH /v1/projects/{id}/members/{user_id}":            {path: "/v1/projects/" + p + "/members/" + viewer.id, body: map[string]any{"role": "owner"}, min: "owner"},
		"DELETE /v1/projects/{id}/members/{user_id}":           {path: "/v1/projects/" + p + "/members/" + owner.id, min: "owner"},
		"GET /v1/projects/{id}/invitations":                    {path: "/v1/projects/" + p + "/invitations", min: "owner"},
		"POST /v1/projects/{id}/invitations":                   {path: "/v1/projects/" + p + "/invitations", body: map[string]any{"user_id": outsider.id, "role": "owner"}, min: "owner"},
		"DELETE /v1/projects/{id}/invitations/{invitation_id}": {path: "/v1/projects/" + p + "/invitations/" + invitation, min: "owner"},
	}

	// The matrix and the contract agree.
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	require.NoError(t, err)
	var unlisted []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			route := method + " " + path
			_, inMatrix := matrix[route]
			if inMatrix == exempt(route) {
				unlisted = append(unlisted, route)
			}
		}
	}
	sort.Strings(unlisted)
	require.Empty(t, unlisted, "routes neither in the tenancy matrix nor said to reach no project (or in both)")

	roles := []string{"viewer", "runner", "editor", "owner"}
	members := map[string]user{"viewer": viewer, "runner": runner, "editor": editor}
	before := b.digest(t)
	for route, tr := range matrix {
		method := strings.Fields(route)[0]
		contentType := []string{}
		if s, ok := tr.body.(string); ok {
			contentType = []string{"Content-Type", map[bool]string{true: "application/octet-stream", false: "application/yaml"}[strings.HasPrefix(s, "name")]}
		}
		r := b.do(method, tr.path, outsider.access, tr.body, contentType...)
		require.Equal(t, http.StatusNotFound, r.status, "%s as an outsider: %s", route, r.body)
		requireProblem(t, r, http.StatusNotFound)
		for _, role := range roles[:slices.Index(roles, tr.min)] {
			r := b.do(method, tr.path, members[role].access, tr.body, contentType...)
			require.Equal(t, http.StatusForbidden, r.status, "%s as a %s: %s", route, role, r.body)
			p := requireProblem(t, r, http.StatusForbidden)
			require.Contains(t, p["detail"], "takes the "+tr.min+" role", "%s as a %s", route, role)
		}
	}
	require.Equal(t, before, b.digest(t), "a refused request changed nothing")

	// What a viewer may do, a viewer does.
	for route, tr := range matrix {
		method := strings.Fields(route)[0]
		if tr.min != "viewer" || tr.noCall || method != http.MethodGet {
			continue
		}
		r := b.do(method, tr.path, viewer.access, nil)
		require.NotContains(t, []int{http.StatusForbidden, http.StatusNotFound}, r.status, "%s as a viewer: %s", route, r.body)
	}
	// Lists read the project's objects, by ?project= or among every project of the reader's,
	// and an outsider's list holds none of them.
	for _, list := range []string{"/v1/tests", "/v1/runs", "/v1/targets", "/v1/agents", "/v1/secrets", "/v1/notification-channels", "/v1/schedules"} {
		r := b.do("GET", list+in, viewer.access, nil)
		require.Equal(t, http.StatusOK, r.status, "%s: %s", list, r.body)
		require.NotEqual(t, `{"items":[]}`, strings.TrimSpace(string(r.body)), list)
		requireProblem(t, b.do("GET", list+in, outsider.access, nil), http.StatusNotFound)
		for _, id := range []string{test, run, target} {
			r := b.do("GET", list, outsider.access, nil)
			require.NotContains(t, string(r.body), id, "%s as an outsider", list)
		}
	}
}

// digest is a fingerprint of everything a project holds and of who belongs to it.
func (b *testBundle) digest(t *testing.T) string {
	t.Helper()
	var d string
	err := b.pool.QueryRow(context.Background(), `SELECT md5(concat_ws('|',
		(SELECT string_agg(concat_ws(',', id, name, latest_revision, project_id, baseline_run_id, baseline_tolerances), ';' ORDER BY id) FROM tests),
		(SELECT string_agg(concat_ws(',', test_id, revision, sha256), ';' ORDER BY test_id, revision) FROM test_revisions),
		(SELECT string_agg(concat_ws(',', test_id, name, sha256), ';' ORDER BY test_id, name) FROM test_files),
		(SELECT string_agg(concat_ws(',', id, project_id), ';' ORDER BY id) FROM scripts),
		(SELECT string_agg(concat_ws(',', id, state, stop_state, ended_at), ';' ORDER BY id) FROM runs),
		(SELECT string_agg(concat_ws(',', id, checked_at, verified_at), ';' ORDER BY id) FROM targets),
		(SELECT string_agg(concat_ws(',', id, name, project_id), ';' ORDER BY id) FROM agents),
		(SELECT string_agg(concat_ws(',', project_id, name, updated_at), ';' ORDER BY project_id, name) FROM secrets),
		(SELECT string_agg(concat_ws(',', id, name, events, paused_at, updated_at), ';' ORDER BY id) FROM notification_channels),
		(SELECT count(*) FROM notification_deliveries),
		(SELECT string_agg(concat_ws(',', id, paused_at, next_at), ';' ORDER BY id) FROM schedules),
		(SELECT string_agg(concat_ws(',', id, name), ';' ORDER BY id) FROM projects),
		(SELECT string_agg(concat_ws(',', project_id, user_id, role), ';' ORDER BY project_id, user_id) FROM project_members),
		(SELECT string_agg(concat_ws(',', id, user_id, role), ';' ORDER BY id) FROM project_invitations),
		(SELECT count(*) FROM agent_pings), (SELECT count(*) FROM agent_jobs)))`).Scan(&d)
	require.NoError(t, err)
	return d
}
