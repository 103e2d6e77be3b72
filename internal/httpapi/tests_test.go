package httpapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control/fleet"
	"github.com/barrage-load/barrage/internal/postgres"
	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/migrations"
)

const usersTest = `version: 1
name: users
variables:
  data:
    - { file: users.csv, order: sequential }
session:
  groups:
    - name: login
      requests:
        - { name: login, url: "http://127.0.0.1:9/login?u=${user}" }
load:
  vus: 2
  duration: 5s
`

func TestTestsAreSavedAsRevisionsWithTheirFiles(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, u := b.adminAndUser()

	// YAML as it is written; the parser's errors name their lines.
	bad := b.do("POST", "/v1/tests", u.access, "version: 1\nname: x\nsession:\n  groups: 7\n", "Content-Type", "application/yaml")
	p := requireProblem(t, bad, http.StatusUnprocessableEntity)
	require.Contains(t, fmt.Sprint(p["errors"]), "line 4")

	created := b.do("POST", "/v1/tests", u.access, usersTest, "Content-Type", "application/yaml")
	require.Equal(t, http.StatusCreated, created.status, "body: %s", created.body)
	test := created.json(t)
	id := test["id"].(string)
	require.Equal(t, "users", test["name"])
	require.EqualValues(t, 1, test["latest_revision"])
	require.Empty(t, test["files"])

	// Its script cannot be generated before its data file is there: 422 naming it.
	p = requireProblem(t, b.do("POST", "/v1/tests/"+id+"/scripts", u.access, nil), http.StatusUnprocessableEntity)
	require.Contains(t, fmt.Sprint(p["errors"]), "users.csv")

	put := b.do("PUT", "/v1/tests/"+id+"/files/users.csv", u.access, "user\nann\nbob\n", "Content-Type", "application/octet-stream")
	require.Equal(t, http.StatusCreated, put.status, "body: %s", put.body)
	require.EqualValues(t, 13, put.json(t)["size"])
	put = b.do("PUT", "/v1/tests/"+id+"/files/users.csv", u.access, "user\nann\nbob\ncid\n", "Content-Type", "application/octet-stream")
	require.Equal(t, http.StatusOK, put.status, "body: %s", put.body)
	get := b.do("GET", "/v1/tests/"+id+"/files/users.csv", u.access, nil)
	require.Equal(t, http.StatusOK, get.status)
	require.Equal(t, "user\nann\nbob\ncid\n", string(get.body))
	requireField(t, requireProblem(t, b.do("PUT", "/v1/tests/"+id+"/files/..hidden", u.access, "x", "Content-Type", "application/octet-stream"), http.StatusBadRequest), "name")
	requireProblem(t, b.do("PUT", "/v1/tests/"+id+"/files/a.csv", u.access, "x", "Content-Type", "text/plain"), http.StatusUnsupportedMediaType)
	requireProblem(t, b.do("DELETE", "/v1/tests/"+id+"/files/a%00b", u.access, nil), http.StatusBadRequest)
	requireProblem(t, b.do("DELETE", "/v1/tests/"+id+"/files/absent.csv", u.access, nil), http.StatusNotFound)
	require.Len(t, b.do("GET", "/v1/tests", u.access, nil).json(t)["items"].([]any)[0].(map[string]any)["files"], 1)

	// A test without plugins is generated without an agent; the script is immutable and
	// carries the file as it was.
	gen := b.do("POST", "/v1/tests/"+id+"/scripts", u.access, nil)
	require.Equal(t, http.StatusCreated, gen.status, "body: %s", gen.body)
	sc := gen.json(t)
	require.Equal(t, id, sc["test_id"])
	require.EqualValues(t, 1, sc["test_revision"])
	require.Len(t, sc["files"], 1)
	require.EqualValues(t, 17, sc["files"].([]any)[0].(map[string]any)["size"])

	// A JSON save is revision 2, renamed; revision 1 stays readable as it was written.
	doc := map[string]any{"version": 1, "name": "users v2", "session": map[string]any{"groups": []any{
		map[string]any{"name": "home", "requests": []any{map[string]any{"name": "home", "url": "http://127.0.0.1:9/"}}},
	}}, "load": map[string]any{"vus": 1, "duration": "2s"}}
	saved := b.do("PATCH", "/v1/tests/"+id+"?name=renamed", u.access, doc)
	require.Equal(t, http.StatusOK, saved.status, "body: %s", saved.body)
	require.EqualValues(t, 2, saved.json(t)["latest_revision"])
	require.Equal(t, "renamed", saved.json(t)["name"])
	revs := b.do("GET", "/v1/tests/"+id+"/revisions", u.access, nil).json(t)["items"].([]any)
	require.Len(t, revs, 2)
	require.Equal(t, "json", revs[0].(map[string]any)["format"])
	first := b.do("GET", "/v1/tests/"+id+"/revisions/1", u.access, nil).json(t)
	require.Equal(t, usersTest, first["source"])
	require.Equal(t, "yaml", first["format"])
	requireProblem(t, b.do("GET", "/v1/tests/"+id+"/revisions/3", u.access, nil), http.StatusNotFound)
	// A refused save stores nothing.
	requireProblem(t, b.do("PATCH", "/v1/tests/"+id, u.access, map[string]any{"version": 1}), http.StatusUnprocessableEntity)
	require.EqualValues(t, 2, b.do("GET", "/v1/tests/"+id, u.access, nil).json(t)["latest_revision"])

	// A run of the test generates its latest revision first.
	agentID, token := b.registerAgent("/v1/agents", u.access, "mine", nil)
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", token, hello).status)
	run := b.do("POST", "/v1/runs", u.access, map[string]any{"test_id": id, "vus": 1, "duration_seconds": 1})
	require.Equal(t, http.StatusCreated, run.status, "body: %s", run.body)
	scriptID := run.json(t)["script_id"].(string)
	require.EqualValues(t, 2, b.do("GET", "/v1/scripts/"+scriptID, u.access, nil).json(t)["test_revision"])
	requireProblem(t, b.do("POST", "/v1/runs", u.access, map[string]any{"test_id": id, "script_id": scriptID}), http.StatusUnprocessableEntity)
	_ = agentID

	// Deleting the test keeps its scripts.
	require.Equal(t, http.StatusNoContent, b.do("DELETE", "/v1/tests/"+id, u.access, nil).status)
	requireProblem(t, b.do("GET", "/v1/tests/"+id, u.access, nil), http.StatusNotFound)
	require.Equal(t, http.StatusOK, b.do("GET", "/v1/scripts/"+scriptID, u.access, nil).status)
}

func TestADataFileLargerThanTheLimitIs413(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{maxFileBytes: 1024})
	_, u := b.adminAndUser()
	id := b.do("POST", "/v1/tests", u.access, usersTest, "Content-Type", "application/yaml").json(t)["id"].(string)
	big := strings.Repeat("x", 1025)
	requireProblem(t, b.do("PUT", "/v1/tests/"+id+"/files/users.csv", u.access, big, "Content-Type", "application/octet-stream"), http.StatusRequestEntityTooLarge)
	require.Empty(t, b.do("GET", "/v1/tests/"+id, u.access, nil).json(t)["files"])
	// The limit is the files' alone: other bodies keep theirs.
	require.Equal(t, http.StatusCreated, b.do("PUT", "/v1/tests/"+id+"/files/users.csv", u.access, big[:1024], "Content-Type", "application/octet-stream").status)
}

func TestATestHoldsAtMostTwentyDataFiles(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, u := b.adminAndUser()
	id := b.do("POST", "/v1/tests", u.access, usersTest, "Content-Type", "application/yaml").json(t)["id"].(string)
	put := func(name string) response {
		return b.do("PUT", "/v1/tests/"+id+"/files/"+name, u.access, "user\nann\n", "Content-Type", "application/octet-stream")
	}
	for i := range 20 {
		require.Equal(t, http.StatusCreated, put(fmt.Sprintf("f%02d.csv", i)).status)
	}
	requireField(t, requireProblem(t, put("one-more.csv"), http.StatusUnprocessableEntity), "name")
	require.Equal(t, http.StatusOK, put("f07.csv").status, "replacing a file is no new one")
	require.Len(t, b.do("GET", "/v1/tests/"+id, u.access, nil).json(t)["files"], 20)
}

func TestTestsAreTheirOwnersAlone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, u := b.adminAndUser()
	id := b.do("POST", "/v1/tests", u.access, usersTest, "Content-Type", "application/yaml").json(t)["id"].(string)
	require.Equal(t, http.StatusCreated, b.do("PUT", "/v1/tests/"+id+"/files/users.csv", u.access, "user\nann\n", "Content-Type", "application/octet-stream").status)

	// The admin is another user here: every route of the test answers 404.
	for _, r := range []struct{ method, path string }{
		{"GET", "/v1/tests/" + id}, {"DELETE", "/v1/tests/" + id}, {"GET", "/v1/tests/" + id + "/revisions"},
		{"GET", "/v1/tests/" + id + "/revisions/1"}, {"GET", "/v1/tests/" + id + "/files/users.csv"},
		{"DELETE", "/v1/tests/" + id + "/files/users.csv"}, {"POST", "/v1/tests/" + id + "/debug"},
		{"POST", "/v1/tests/" + id + "/scripts"},
	} {
		requireProblem(t, b.do(r.method, r.path, admin.access, nil), http.StatusNotFound)
	}
	requireProblem(t, b.do("PATCH", "/v1/tests/"+id, admin.access, usersTest, "Content-Type", "application/yaml"), http.StatusNotFound)
	requireProblem(t, b.do("PUT", "/v1/tests/"+id+"/files/users.csv", admin.access, "user\nmallory\n", "Content-Type", "application/octet-stream"), http.StatusNotFound)
	requireProblem(t, b.do("POST", "/v1/runs", admin.access, map[string]any{"test_id": id}), http.StatusNotFound)
	require.Empty(t, b.do("GET", "/v1/tests", admin.access, nil).json(t)["items"])
	// Nothing of the user's changed.
	require.Equal(t, "user\nann\n", string(b.do("GET", "/v1/tests/"+id+"/files/users.csv", u.access, nil).body))
	require.Len(t, b.do("GET", "/v1/tests", u.access, nil).json(t)["items"], 1)
}

const pluginTest = `version: 1
name: with plugins
plugins:
  - { use: random-data@1.0.0, as: rnd, kind: session-element, config: { email: { syntax: email } } }
  - { use: inject-headers@1.0.0, as: inject, kind: source-modifier, config: { headers: { X-Env: staging } } }
session:
  groups:
    - name: home
      requests:
        - { name: home, url: "http://127.0.0.1:9/?e=${rnd.email}" }
load: { vus: 1, duration: 2s }
`

// TestDebugAndGenerateAreJobsForAnAgent plays the agent's part by hand: the server hands the
// job to the agent with its work, waits for its answer and checks it.
func TestDebugAndGenerateAreJobsForAnAgent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, u := b.adminAndUser()
	id := b.do("POST", "/v1/tests", u.access, pluginTest, "Content-Type", "application/yaml").json(t)["id"].(string)

	// No agent online: a clear 422, not a wait.
	p := requireProblem(t, b.do("POST", "/v1/tests/"+id+"/debug", u.access, nil), http.StatusUnprocessableEntity)
	requireField(t, p, "agent_id")

	agentID, token := b.registerAgent("/v1/agents", u.access, "mine", nil)
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", token, hello).status)

	// answer takes the agent's next job of kind and answers it with body.
	answer := func(kind string, body func(job map[string]any) any) <-chan error {
		done := make(chan error, 1)
		go func() {
			w := b.do("POST", "/v1/agent/lease", token, map[string]any{"protocol": protocol, "version": "test", "cores": 2, "wait_seconds": 5})
			var work struct{ Jobs []map[string]any }
			if err := json.Unmarshal(w.body, &work); err != nil || len(work.Jobs) != 1 || work.Jobs[0]["kind"] != kind {
				done <- fmt.Errorf("want one %s job: %d %s", kind, w.status, w.body)
				return
			}
			job := work.Jobs[0]
			r := b.do("POST", "/v1/agent/jobs/"+job["id"].(string), token, body(job))
			if r.status != http.StatusNoContent {
				done <- fmt.Errorf("answer: %d %s", r.status, r.body)
				return
			}
			// An answer is taken once.
			if r := b.do("POST", "/v1/agent/jobs/"+job["id"].(string), token, body(job)); r.status != http.StatusNotFound {
				done <- fmt.Errorf("second answer: %d %s", r.status, r.body)
				return
			}
			done <- nil
		}()
		return done
	}

	trace := map[string]any{"passed": false, "requests": []any{map[string]any{
		"request": "home", "method": "GET", "url": "http://127.0.0.1:9/?e=a@b.c", "request_headers": []any{},
		"response_headers": []any{}, "duration_ms": 1.5, "bytes_in": 0, "vars": map[string]any{}, "failures": []any{},
		"error": "connect: refused by the agent's target policy",
	}}}
	done := answer("debug", func(job map[string]any) any {
		// The job carries the test's revision as it was saved.
		src, _ := base64.StdEncoding.DecodeString(job["test"].(map[string]any)["source"].(string))
		if string(src) != pluginTest {
			return map[string]any{"error": "wrong source"}
		}
		return map[string]any{"debug": trace}
	})
	dbg := b.do("POST", "/v1/tests/"+id+"/debug", u.access, nil)
	require.NoError(t, <-done)
	require.Equal(t, http.StatusOK, dbg.status, "body: %s", dbg.body)
	d := dbg.json(t)
	require.Equal(t, agentID, d["agent_id"])
	require.Equal(t, false, d["passed"])
	require.Contains(t, d["requests"].([]any)[0].(map[string]any)["error"], "target policy")

	// An agent that cannot run the test says why, and the user reads it.
	done = answer("generate", func(map[string]any) any {
		return map[string]any{"error": "plugin random-data@1.0.0 is not in /plugins"}
	})
	p = requireProblem(t, b.do("POST", "/v1/tests/"+id+"/scripts", u.access, nil), http.StatusUnprocessableEntity)
	require.NoError(t, <-done)
	require.Contains(t, p["detail"], "random-data@1.0.0 is not in")

	// An agent that leaves a source plugin in, or pins nothing, or answers a generation with a
	// trace, is refused.
	done = answer("generate", func(map[string]any) any {
		return map[string]any{"generated": map[string]any{"source": jsonOf(t, pluginTest), "plugins": []any{}}}
	})
	requireProblem(t, b.do("POST", "/v1/tests/"+id+"/scripts", u.access, nil), http.StatusUnprocessableEntity)
	require.NoError(t, <-done)
	mismatch := make(chan error, 1)
	go func() {
		w := b.do("POST", "/v1/agent/lease", token, map[string]any{"protocol": protocol, "version": "test", "cores": 2, "wait_seconds": 5})
		var work struct{ Jobs []map[string]any }
		if err := json.Unmarshal(w.body, &work); err != nil || len(work.Jobs) != 1 {
			mismatch <- fmt.Errorf("want one job: %s", w.body)
			return
		}
		path := "/v1/agent/jobs/" + work.Jobs[0]["id"].(string)
		if r := b.do("POST", path, token, map[string]any{"debug": trace}); r.status != http.StatusUnprocessableEntity {
			mismatch <- fmt.Errorf("a trace for a generation: %d %s", r.status, r.body)
			return
		}
		b.do("POST", path, token, map[string]any{"error": "gave up"})
		mismatch <- nil
	}()
	requireProblem(t, b.do("POST", "/v1/tests/"+id+"/scripts", u.access, nil), http.StatusUnprocessableEntity)
	require.NoError(t, <-mismatch)

	generated := `{"version":1,"name":"with plugins","plugins":[{"use":"random-data@1.0.0","as":"rnd","kind":"element"}],` +
		`"session":{"groups":[{"name":"home","requests":[{"name":"home","url":"http://127.0.0.1:9/","headers":{"X-Env":"staging"}}]}]},"load":{"vus":1,"duration":"2s"}}`
	sum := strings.Repeat("ab", 32)
	// A pin for a plugin the script does not use is refused.
	done = answer("generate", func(map[string]any) any {
		return map[string]any{"generated": map[string]any{"source": generated, "plugins": []any{
			map[string]any{"alias": "rnd", "name": "random-data", "version": "1.0.0", "kind": "session-element", "sha256": sum},
			map[string]any{"alias": "evil", "name": "evil", "version": "1.0.0", "kind": "url", "sha256": sum},
		}}}
	})
	requireProblem(t, b.do("POST", "/v1/tests/"+id+"/scripts", u.access, nil), http.StatusUnprocessableEntity)
	require.NoError(t, <-done)
	done = answer("generate", func(map[string]any) any {
		return map[string]any{"generated": map[string]any{"source": generated, "plugins": []any{
			map[string]any{"alias": "rnd", "name": "random-data", "version": "1.0.0", "kind": "session-element", "sha256": sum},
		}}}
	})
	gen := b.do("POST", "/v1/tests/"+id+"/scripts", u.access, map[string]any{"agent_id": agentID})
	require.NoError(t, <-done)
	require.Equal(t, http.StatusCreated, gen.status, "body: %s", gen.body)
	sc := gen.json(t)
	require.Equal(t, generated, sc["source"])
	pins := sc["plugins"].([]any)
	require.Len(t, pins, 1)
	require.Equal(t, sum, pins[0].(map[string]any)["sha256"])

	// A run of the test that the license refuses is refused before its generation: the agent
	// is given no job.
	p = requireProblem(t, b.do("POST", "/v1/runs", u.access, map[string]any{"test_id": id, "vus": 101}), http.StatusUnprocessableEntity)
	require.Contains(t, p["detail"], "max_vus: allowed 100, requested 101")
	idle := b.do("POST", "/v1/agent/lease", token, map[string]any{"protocol": protocol, "version": "test", "cores": 2, "wait_seconds": 0})
	require.Equal(t, http.StatusNoContent, idle.status, "no job: %s", idle.body)

	// A job is the asking user's: another user's agent is not found, and an agent cannot
	// answer a job it was not given.
	requireProblem(t, b.do("POST", "/v1/tests/"+id+"/debug", u.access, map[string]any{"agent_id": uuid.NewString()}), http.StatusNotFound)
	_, otherToken := b.registerAgent("/v1/agents", admin.access, "admin's", nil)
	requireProblem(t, b.do("POST", "/v1/agent/jobs/"+uuid.NewString(), otherToken, map[string]any{"error": "x"}), http.StatusNotFound)
}

// jsonOf is a YAML script as JSON.
func jsonOf(t *testing.T, yamlText string) string {
	t.Helper()
	b, err := script.ToJSON([]byte(yamlText))
	require.NoError(t, err)
	return string(b)
}

// A user's debug and generate jobs wait for shared agents, each holding its request open: at
// most fleet.MaxOpenJobs wait at once, and one more is 429 with Retry-After, at once, not a
// queue that grows. An answered job frees its place.
func TestAUserHasAtMostFourJobsWaiting(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, u := b.adminAndUser()
	id := b.do("POST", "/v1/tests", u.access, pluginTest, "Content-Type", "application/yaml").json(t)["id"].(string)
	_, token := b.registerAgent("/v1/agents", u.access, "mine", nil)
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", token, hello).status)

	waiting := make(chan response, 5)
	for range 4 {
		go func() { waiting <- b.do("POST", "/v1/tests/"+id+"/debug", u.access, nil) }()
	}
	// The agent takes the four jobs, and answers none yet.
	var jobs []string
	take := func(n int) {
		for len(jobs) < n {
			w := b.do("POST", "/v1/agent/lease", token, map[string]any{"protocol": protocol, "version": "test", "cores": 2, "wait_seconds": 5})
			var work struct{ Jobs []struct{ ID string } }
			if w.status == http.StatusOK {
				require.NoError(t, json.Unmarshal(w.body, &work))
			}
			for _, j := range work.Jobs {
				jobs = append(jobs, j.ID)
			}
		}
	}
	take(4)

	fifth := b.do("POST", "/v1/tests/"+id+"/debug", u.access, nil)
	p := requireProblem(t, fifth, http.StatusTooManyRequests)
	require.Contains(t, p["detail"], "you have 4 requests that read a test for an agent")
	require.Equal(t, "1", fifth.header.Get("Retry-After"))
	requireProblem(t, b.do("POST", "/v1/tests/"+id+"/scripts", u.access, nil), http.StatusTooManyRequests)

	// One answer frees one place.
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/jobs/"+jobs[0], token, map[string]any{"error": "gave up"}).status)
	requireProblem(t, <-waiting, http.StatusUnprocessableEntity)
	go func() { waiting <- b.do("POST", "/v1/tests/"+id+"/debug", u.access, nil) }()
	take(5)
	for _, j := range jobs[1:] {
		require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/jobs/"+j, token, map[string]any{"error": "gave up"}).status)
	}
	for range 4 {
		requireProblem(t, <-waiting, http.StatusUnprocessableEntity)
	}
}

// A shared agent does one job of each user at a time, so that one user's slow debugs cannot hold
// it: while a user's job is under way, that user's next one waits and another user's is handed
// over. A job outlives its test: deleting the test answers the job still waiting ("the test was
// deleted") and does not free the slot of the one under way.
func TestASharedAgentDoesOneJobOfEachUserAtATime(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, u := b.adminAndUser()
	v := b.signup(b.invite(admin, map[string]any{"license": map[string]any{"template": "demo"}}), "other@example.com")
	agentID, token := b.registerAgent("/v1/admin/agents", admin.access, "demo", nil)
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", token, hello).status)
	// Each test is known to the agent by its name.
	newTest := func(owner user, name string) string {
		src := strings.Replace(pluginTest, "name: with plugins", "name: "+name, 1)
		r := b.do("POST", "/v1/tests", owner.access, src, "Content-Type", "application/yaml")
		require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
		return r.json(t)["id"].(string)
	}
	const testA, testB, testC = "A", "B", "C"
	ids := map[string]string{testA: newTest(u, testA), testB: newTest(v, testB), testC: newTest(u, testC)}

	answers := make(chan response, 4)
	debug := func(owner user, test string) {
		go func() {
			answers <- b.do("POST", "/v1/tests/"+ids[test]+"/debug", owner.access, map[string]any{"agent_id": agentID})
		}()
	}
	type job struct{ ID, Test string }
	lease := func(wait int) []job {
		w := b.do("POST", "/v1/agent/lease", token, map[string]any{"protocol": protocol, "version": "test", "cores": 2, "wait_seconds": wait})
		var work struct {
			Jobs []struct {
				ID   string
				Test struct{ Name string }
			}
		}
		if w.status == http.StatusOK {
			require.NoError(t, json.Unmarshal(w.body, &work))
		}
		var out []job
		for _, j := range work.Jobs {
			out = append(out, job{j.ID, j.Test.Name})
		}
		return out
	}
	// leaseUntil leases until a job of test arrives, and requires that no other job came.
	leaseUntil := func(test string) job {
		t.Helper()
		for deadline := time.Now().Add(fleet.JobWait); ; {
			got := lease(5)
			if len(got) == 0 {
				require.True(t, time.Now().Before(deadline), "no job of test %s came", test)
				continue
			}
			require.Len(t, got, 1, "one job expected, of test %s: %v", test, got)
			require.Equal(t, test, got[0].Test)
			return got[0]
		}
	}

	debug(u, testA)
	u1 := leaseUntil(testA)
	debug(u, testA)
	debug(v, testB)
	v1 := leaseUntil(testB) // u's second waits for u's first
	require.Empty(t, lease(0))
	// u's second is asked for before its test goes: else its request finds no test at all.
	require.Eventually(t, func() bool {
		var n int
		err := b.pool.QueryRow(context.Background(), "SELECT count(*) FROM agent_jobs WHERE owner_id = $1", u.id).Scan(&n)
		return err == nil && n == 2
	}, 10*time.Second, 10*time.Millisecond, "u's second job was not asked for")

	// Deleting test A answers its waiting job; its job under way still holds u's slot.
	require.Equal(t, http.StatusNoContent, b.do("DELETE", "/v1/tests/"+ids[testA], u.access, nil).status)
	require.Empty(t, lease(0))
	p := requireProblem(t, <-answers, http.StatusNotFound)
	require.Contains(t, p["detail"], "it was deleted")
	debug(u, testC)
	require.Empty(t, lease(0))

	// u's first answered, u's next is handed over.
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/jobs/"+u1.ID, token, map[string]any{"error": "gave up"}).status)
	u2 := leaseUntil(testC)
	for _, j := range []job{v1, u2} {
		require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/jobs/"+j.ID, token, map[string]any{"error": "gave up"}).status)
	}
	// u's first job's test is gone: its asker learns so; the others' agent gave up.
	got := map[int]int{}
	for range 3 {
		got[(<-answers).status]++
	}
	require.Equal(t, map[int]int{http.StatusNotFound: 1, http.StatusUnprocessableEntity: 2}, got)
}

// checkOf asks the server to check body, sent as contentType, and returns its answer, which
// must be a 200 TestCheck.
func (b *testBundle) checkOf(bearer, body, contentType string) map[string]any {
	b.t.Helper()
	r := b.do("POST", "/v1/tests/check", bearer, body, "Content-Type", contentType)
	require.Equal(b.t, http.StatusOK, r.status, "body: %s", r.body)
	return r.json(b.t)
}

func TestCheckingASessionIs200WithWhatTheParserFoundAndStoresNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, u := b.adminAndUser()
	created := b.do("POST", "/v1/tokens", u.access, map[string]any{"name": "reader", "scopes": []string{"read"}})
	require.Equal(t, http.StatusCreated, created.status, "body: %s", created.body)
	reader := secret(created.json(t)["token"].(string))

	// A token that may only read may check, since a check changes nothing.
	good := b.checkOf(reader, usersTest, "application/yaml")
	require.Equal(t, map[string]any{"valid": true, "name": "users", "errors": []any{}}, good)
	doc := `{"version": 1, "name": "as JSON", "session": {"groups": [{"name": "g", "requests": [{"name": "r", "url": "http://127.0.0.1:9/"}]}]}, "load": {"vus": 1, "duration": "1s"}}`
	require.Equal(t, map[string]any{"valid": true, "name": "as JSON", "errors": []any{}}, b.checkOf(reader, doc, "application/json"))
	requireProblem(t, b.do("POST", "/v1/tests", reader, usersTest, "Content-Type", "application/yaml"), http.StatusForbidden)

	// A refused session: every error with its path and line, as a save's 422 lists them, and
	// the name the parser read before them.
	bad := "version: 1\nname: half done\nsession:\n  groups: 7\nload: { vus: 0, duration: 1s }\n"
	check := b.checkOf(u.access, bad, "application/yaml")
	require.Equal(t, false, check["valid"])
	require.Equal(t, "half done", check["name"])
	saved := requireProblem(t, b.do("POST", "/v1/tests", u.access, bad, "Content-Type", "application/yaml"), http.StatusUnprocessableEntity)
	require.Equal(t, saved["errors"], check["errors"])
	errs := check["errors"].([]any)
	require.Len(t, errs, 2)
	require.Equal(t, map[string]any{"field": "session.groups", "reason": "must be a list, not a number (line 4)", "line": float64(4)}, errs[0])
	require.EqualValues(t, 5, errs[1].(map[string]any)["line"])

	// Whatever the body holds, the answer is the parser's, never a 4xx nor a 500: text that is
	// not yet JSON, JSON that is no object, two documents, bytes that are not UTF-8, a nesting
	// deeper than a script may be, more values than it may hold.
	for _, c := range []struct{ body, contentType string }{
		{`{"version": 1, "name": "typing`, "application/json"},
		{"{}", "application/json"},
		{"[1]", "application/json"},
		{"null", "application/json"},
		{"{}{}", "application/json"},
		{"\xff\xfe", "application/json"},
		{"\xff\xfe", "application/yaml"},
		{"version: 1\nname: [unclosed\n", "application/yaml"},
		{"a: b: c", "application/yaml"},
		{strings.Repeat("[", 100_000), "application/json"},
		{strings.Repeat("- ", 20_000) + "x", "application/yaml"},
		{"[" + strings.Repeat("1,", script.MaxValues) + "1]", "application/json"},
	} {
		check := b.checkOf(u.access, c.body, c.contentType)
		require.Equal(t, false, check["valid"], "%.40q", c.body)
		require.NotEmpty(t, check["errors"], "%.40q", c.body)
		require.NotContains(t, check, "name")
	}
	typing := b.checkOf(u.access, "version: 1\nname: typing\nsession:\n  groups:\n    - name: g\n      requests:\n        - { name: r, url: ", "application/yaml")
	require.Equal(t, false, typing["valid"])
	require.Contains(t, fmt.Sprint(typing["errors"]), "line")

	// Only what createTest refuses before reading a script is refused: no body, another
	// content type.
	requireProblem(t, b.do("POST", "/v1/tests/check", u.access, nil), http.StatusBadRequest)
	requireProblem(t, b.do("POST", "/v1/tests/check", u.access, "", "Content-Type", "application/yaml"), http.StatusBadRequest)
	requireProblem(t, b.do("POST", "/v1/tests/check", u.access, usersTest, "Content-Type", "text/plain"), http.StatusUnsupportedMediaType)
	requireProblem(t, b.do("POST", "/v1/tests", u.access, usersTest, "Content-Type", "text/plain"), http.StatusUnsupportedMediaType)
	requireProblem(t, b.do("POST", "/v1/tests", u.access, nil), http.StatusBadRequest)
	requireProblem(t, b.do("PATCH", "/v1/tests/"+uuid.NewString(), u.access, "", "Content-Type", "application/yaml"), http.StatusBadRequest)

	// Nothing was stored.
	require.Empty(t, b.do("GET", "/v1/tests", u.access, nil).json(t)["items"])
}

func TestASessionToCheckLargerThanTheBodyLimitIs413(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{maxBody: 1024})
	_, u := b.adminAndUser()
	requireProblem(t, b.do("POST", "/v1/tests/check", u.access, usersTest+"#"+strings.Repeat("x", 1024), "Content-Type", "application/yaml"), http.StatusRequestEntityTooLarge)
	require.Equal(t, http.StatusOK, b.do("POST", "/v1/tests/check", u.access, usersTest, "Content-Type", "application/yaml").status)
}

// testOf saves src as a new test of bearer's and returns its id.
func (b *testBundle) testOf(bearer, src string) string {
	b.t.Helper()
	r := b.do("POST", "/v1/tests", bearer, src, "Content-Type", "application/yaml")
	require.Equal(b.t, http.StatusCreated, r.status, "body: %s", r.body)
	return r.json(b.t)["id"].(string)
}

func TestATestShowsItsLastRunAndNoOneElses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, u := b.adminAndUser()
	id := b.testOf(u.access, smokeScript)
	other := b.testOf(u.access, strings.Replace(smokeScript, "name: smoke", "name: other", 1))
	lastRun := func() (any, any) {
		t.Helper()
		items := b.do("GET", "/v1/tests", u.access, nil).json(t)["items"].([]any)
		require.Len(t, items, 2)
		require.Equal(t, id, items[1].(map[string]any)["id"])
		require.Equal(t, other, items[0].(map[string]any)["id"])
		require.Equal(t, items[1].(map[string]any)["last_run"], b.do("GET", "/v1/tests/"+id, u.access, nil).json(t)["last_run"])
		return items[1].(map[string]any)["last_run"], items[0].(map[string]any)["last_run"]
	}
	mine, others := lastRun()
	require.Nil(t, mine, "no run yet")
	require.Nil(t, others)

	_, token := b.registerAgent("/v1/agents", u.access, "mine", nil)
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", token, hello).status)
	first := b.do("POST", "/v1/runs", u.access, map[string]any{"test_id": id, "duration_seconds": 1})
	require.Equal(t, http.StatusCreated, first.status, "body: %s", first.body)
	firstID := first.json(t)["id"].(string)
	// The run's manifest names the test and revision its script was generated from; runs made
	// before it did say so too, once migrated.
	manifest := first.json(t)["manifest"].(map[string]any)
	require.Equal(t, id, manifest["test_id"])
	require.EqualValues(t, 1, manifest["test_revision"])
	_, err := b.pool.Exec(context.Background(), `UPDATE runs SET manifest = manifest - 'test_id' - 'test_revision'`)
	require.NoError(t, err)
	require.NotContains(t, b.do("GET", "/v1/runs/"+firstID, u.access, nil).json(t)["manifest"], "test_id")
	backfill, err := migrations.FS.ReadFile("0017_run_test.sql")
	require.NoError(t, err)
	_, err = b.pool.Exec(context.Background(), string(backfill))
	require.NoError(t, err)
	require.Equal(t, manifest, b.do("GET", "/v1/runs/"+firstID, u.access, nil).json(t)["manifest"])
	mine, others = lastRun()
	require.Equal(t, firstID, mine.(map[string]any)["id"])
	require.Equal(t, "queued", mine.(map[string]any)["state"])
	require.NotContains(t, mine, "outcome")
	require.Nil(t, others, "a run of another test is not this one's")

	// The newest run is the last, and an ended one says its outcome in brief.
	require.Equal(t, http.StatusOK, b.do("POST", "/v1/runs/"+firstID+"/cancel", u.access, nil).status)
	second := b.do("POST", "/v1/runs", u.access, map[string]any{"test_id": id, "duration_seconds": 1})
	require.Equal(t, http.StatusCreated, second.status, "body: %s", second.body)
	secondID := second.json(t)["id"].(string)
	_, err = b.pool.Exec(context.Background(), `UPDATE runs SET state = 'finished', ended_at = now(), summary = $2 WHERE id = $1`, secondID,
		`{"total": {"count": 40, "error_rate": 0.25, "p95_ms": 12.5, "histogram": "AAAA"}, "thresholds": [{"passed": true}, {"passed": false}],
		  "verdict": {"generator_limited": true}, "requests": [{"name": "get home"}]}`)
	require.NoError(t, err)
	mine, _ = lastRun()
	require.Equal(t, secondID, mine.(map[string]any)["id"])
	require.Equal(t, "finished", mine.(map[string]any)["state"])
	require.NotEmpty(t, mine.(map[string]any)["ended_at"])
	require.Equal(t, map[string]any{"requests": float64(40), "error_rate": 0.25, "p95_ms": 12.5, "thresholds_failed": float64(1),
		"generator_limited": true, "incomplete": false}, mine.(map[string]any)["outcome"])

	// Another user's run of a script that names the user's test, newer than the user's runs,
	// is no run of the user's test.
	_, adminToken := b.registerAgent("/v1/agents", admin.access, "admins", nil)
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", adminToken, hello).status)
	testID := uuid.MustParse(id)
	sum := sha256.Sum256([]byte(smokeScript))
	sc, _, err := b.store.CreateScript(context.Background(), barrage.Script{ID: uuid.Must(uuid.NewV7()), OwnerID: uuid.MustParse(admin.id),
		ProjectID: b.personal(admin), Name: "smoke", Source: []byte(smokeScript), SHA256: sum[:], Manifest: barrage.ScriptManifest{TestID: &testID, TestRevision: 1}}, postgres.Quota{})
	require.NoError(t, err)
	theirs := b.do("POST", "/v1/runs", admin.access, map[string]any{"script_id": sc.ID.String(), "duration_seconds": 1})
	require.Equal(t, http.StatusCreated, theirs.status, "body: %s", theirs.body)
	mine, _ = lastRun()
	require.Equal(t, secondID, mine.(map[string]any)["id"])
}
