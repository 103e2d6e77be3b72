package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control"
	"github.com/barrage-load/barrage/internal/control/fleet"
	"github.com/barrage-load/barrage/internal/controltest"
	"github.com/barrage-load/barrage/internal/httpapi"
	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/postgres"
	"github.com/barrage-load/barrage/internal/report/reporttest"
)

// addScript stores a script of the user's directly in the store.
func (b *testBundle) addScript(u user, src string) string {
	b.t.Helper()
	sum := sha256.Sum256([]byte(src))
	sc, _, err := b.store.CreateScript(context.Background(), barrage.Script{
		ID: uuid.Must(uuid.NewV7()), OwnerID: uuid.MustParse(u.id), ProjectID: b.personal(u), Name: "smoke", Source: []byte(src), SHA256: sum[:],
	}, postgres.Quota{})
	require.NoError(b.t, err)
	return sc.ID.String()
}

// personal is u's personal project.
func (b *testBundle) personal(u user) uuid.UUID {
	b.t.Helper()
	m, err := b.store.Memberships(context.Background(), uuid.MustParse(u.id))
	require.NoError(b.t, err)
	id, err := barrage.Principal{Memberships: m}.HomeProject()
	require.NoError(b.t, err, u.email)
	return id
}

const smokeScript = controltest.SmokeScript

// registerAgent registers an agent (shared when admin's route is used) and returns its id and
// token.
func (b *testBundle) registerAgent(path, bearer, name string, extra map[string]any) (string, string) {
	b.t.Helper()
	body := map[string]any{"name": name}
	for k, v := range extra {
		body[k] = v
	}
	r := b.do("POST", path, bearer, body)
	require.Equal(b.t, http.StatusCreated, r.status, "body: %s", r.body)
	m := r.json(b.t)
	return m["id"].(string), secret(m["token"].(string))
}

// hello is an agent's lease request that does not wait.
const protocol = barrage.AgentProtocol

var hello = map[string]any{"protocol": protocol, "version": "test", "cores": 2, "wait_seconds": 0}

// second is a snapshot holding n requests of label taking latency each, encoded; failed of
// them with a 5xx.
func second(t *testing.T, idx int64, label string, n int, latency time.Duration, failed ...int) map[string]any {
	t.Helper()
	return secondAt(t, time.Unix(1_700_000_000+idx, 0), idx, label, n, latency, failed...)
}

// secondAt is second with the snapshot's start as the agent's wall clock read it.
func secondAt(t *testing.T, start time.Time, idx int64, label string, n int, latency time.Duration, failed ...int) map[string]any {
	t.Helper()
	st := metrics.NewStats()
	for range n {
		st.Requests++
		st.Latency.Record(latency)
	}
	if len(failed) > 0 {
		st.Errors[metrics.Err5xx] = int64(failed[0])
	}
	snap := &metrics.Snapshot{Start: start, Duration: time.Second, Labels: map[metrics.Key]*metrics.Stats{metrics.RequestKey(label): st}}
	enc, err := snap.MarshalBinary()
	require.NoError(t, err)
	return map[string]any{"index": idx, "snapshot": base64.StdEncoding.EncodeToString(enc), "health": map[string]any{
		"cpu": 0.2, "cores": 2, "lateness_max_ns": 0, "lateness_sum_ns": 0, "scheduled": 0, "late": 0, "dropped": 0, "active_vus": 4,
	}}
}

func TestARunGoesThroughItsAgentToItsSummary(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, u := b.adminAndUser()
	sharedID, _ := b.registerAgent("/v1/admin/agents", admin.access, "demo", map[string]any{"max_vus": 500, "max_run_duration_seconds": 300})
	ownID, ownToken := b.registerAgent("/v1/agents", u.access, "mine", nil)

	// Both are listed for the user, own first, offline until they ask for work.
	list := b.do("GET", "/v1/agents", u.access, nil).json(t)["items"].([]any)
	require.Len(t, list, 2)
	require.Equal(t, ownID, list[0].(map[string]any)["id"])
	require.Equal(t, "offline", list[0].(map[string]any)["state"])
	require.Equal(t, sharedID, list[1].(map[string]any)["id"])

	script := b.addScript(u, smokeScript)
	p := requireProblem(t, b.do("POST", "/v1/runs", u.access, map[string]any{"script_id": script}), http.StatusUnprocessableEntity)
	requireField(t, p, "agents")

	// The agent asks for work: none yet, but now it is online.
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", ownToken, hello).status)
	require.Equal(t, "online", b.do("GET", "/v1/agents/"+ownID, u.access, nil).json(t)["state"])

	created := b.do("POST", "/v1/runs", u.access, map[string]any{"script_id": script, "vus": 6, "duration_seconds": 5})
	require.Equal(t, http.StatusCreated, created.status, "body: %s", created.body)
	run := created.json(t)
	runID := run["id"].(string)
	require.Equal(t, "queued", run["state"])
	require.Equal(t, ownID, run["shards"].([]any)[0].(map[string]any)["agent_id"])

	job := b.do("POST", "/v1/agent/lease", ownToken, hello)
	require.Equal(t, http.StatusOK, job.status, "body: %s", job.body)
	j := job.json(t)["shard"].(map[string]any)
	require.Equal(t, runID, j["run_id"])
	require.Equal(t, "0:1/1", j["segment"])
	require.EqualValues(t, 6, j["load"].(map[string]any)["vus"])
	require.Positive(t, j["starts_in_ms"], "the shared start lies ahead")
	src, err := base64.StdEncoding.DecodeString(j["script"].(map[string]any)["source"].(string))
	require.NoError(t, err)
	require.Equal(t, smokeScript, string(src))
	shard := j["shard_id"].(string)
	lease := j["lease"]
	report := "/v1/agent/shards/" + shard + "/report"

	// Two seconds, then the same two again (a retry): stored once.
	secs := []any{second(t, 0, "get home", 100, 10*time.Millisecond), second(t, 1, "get home", 50, 30*time.Millisecond)}
	for range 2 {
		r := b.do("POST", report, ownToken, map[string]any{"lease": lease, "seconds": secs})
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		require.Nil(t, r.json(t)["stop"])
	}
	require.Equal(t, "running", b.do("GET", "/v1/runs/"+runID, u.access, nil).json(t)["state"])
	// A stale holder's lease is refused, and another agent's token does not reach the shard.
	requireProblem(t, b.do("POST", report, ownToken, map[string]any{"lease": 99, "seconds": []any{}}), http.StatusConflict)
	requireProblem(t, b.do("GET", "/v1/runs/"+runID+"/summary", u.access, nil), http.StatusConflict)
	requireProblem(t, b.do("GET", "/v1/runs/"+runID+"/summary.csv", u.access, nil), http.StatusConflict)

	end := b.do("POST", report, ownToken, map[string]any{"lease": lease, "seconds": []any{second(t, 2, "get home", 10, 20*time.Millisecond)},
		"end": map[string]any{"reason": "finished", "late_start_ms": 3, "result": map[string]any{"iterations": 160,
			"error_samples": []any{map[string]any{"label": "get home", "class": "connect", "message": "dial tcp 127.0.0.1:9: connect: connection refused", "count": 2}},
			"hook_errors":   []any{map[string]any{"reason": "timeout", "count": 4}}}}})
	require.Equal(t, http.StatusOK, end.status, "body: %s", end.body)
	got := b.do("GET", "/v1/runs/"+runID, u.access, nil).json(t)
	require.Equal(t, "finished", got["state"])
	require.NotEmpty(t, got["reason"])
	require.NotEmpty(t, got["ended_at"])

	sum := b.do("GET", "/v1/runs/"+runID+"/summary", u.access, nil)
	require.Equal(t, http.StatusOK, sum.status, "body: %s", sum.body)
	s := sum.json(t)
	total := s["total"].(map[string]any)
	require.EqualValues(t, 160, total["count"], "the resent seconds count once")
	require.InDelta(t, 10, total["p50_ms"], 0.1)
	require.InDelta(t, 30, total["p99_ms"], 0.1)
	require.EqualValues(t, 3, s["seconds"])
	require.Equal(t, []any{map[string]any{"label": "get home", "class": "connect", "message": "dial tcp 127.0.0.1:9: connect: connection refused", "count": float64(2)}},
		s["error_samples"], "the agents' reasons of failures come with the summary")
	require.Equal(t, map[string]any{"timeout": float64(4)}, s["hook_errors"], "so do their failed plugin calls")
	th := s["thresholds"].([]any)[0].(map[string]any)
	require.Equal(t, "p95 < 300ms", th["check"])
	require.Equal(t, true, th["passed"])
	agents := s["agents"].([]any)
	require.Len(t, agents, 1)
	require.EqualValues(t, 160, agents[0].(map[string]any)["requests"])
	require.EqualValues(t, 3, agents[0].(map[string]any)["late_start_ms"])

	// The series: each second, per label, merged.
	var series struct {
		Seconds []struct {
			Index  int64
			Labels []struct {
				Name  string
				Kind  string
				Count int64
			}
		}
	}
	sr := b.do("GET", "/v1/runs/"+runID+"/series", u.access, nil)
	require.Equal(t, http.StatusOK, sr.status, "body: %s", sr.body)
	require.NoError(t, json.Unmarshal(sr.body, &series))
	require.Len(t, series.Seconds, 3)
	require.EqualValues(t, 50, series.Seconds[1].Labels[0].Count)
	require.Equal(t, "request", series.Seconds[1].Labels[0].Kind)
	// The same series as CSV, in barrage run --csv's columns; another user's run is not found.
	csvRes := b.do("GET", "/v1/runs/"+runID+"/series.csv", u.access, nil)
	require.Equal(t, http.StatusOK, csvRes.status, "body: %s", csvRes.body)
	rows, err := csv.NewReader(bytes.NewReader(csvRes.body)).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 4, "a header and a row a second")
	require.Equal(t, []string{"second", "kind", "label", "count", "rps"}, rows[0][:5])
	require.Equal(t, []string{"2", "request", "get home", "50", "50.0"}, rows[2][:5])
	require.Equal(t, "4", rows[2][len(rows[2])-1], "the agents' active VUs")
	requireProblem(t, b.do("GET", "/v1/runs/"+runID+"/series.csv", admin.access, nil), http.StatusNotFound)
	sumRes := b.do("GET", "/v1/runs/"+runID+"/summary.csv", u.access, nil)
	require.Equal(t, http.StatusOK, sumRes.status, "body: %s", sumRes.body)
	rows, err = csv.NewReader(bytes.NewReader(sumRes.body)).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 3, "a header, all requests, the request")
	require.Equal(t, []string{"kind", "label", "count"}, rows[0][:3])
	require.Equal(t, []string{"total", "all requests", "160"}, rows[1][:3])
	require.Equal(t, []string{"request", "get home", "160"}, rows[2][:3])
	requireProblem(t, b.do("GET", "/v1/runs/"+runID+"/summary.csv", admin.access, nil), http.StatusNotFound)
	// The manifest pins the script and names the agent that ran it, with its version.
	m := got["manifest"].(map[string]any)
	require.Len(t, m["script_sha256"], 64)
	require.Equal(t, "test", m["agents"].([]any)[0].(map[string]any)["version"])

	// The shard has ended: a late report is refused.
	requireProblem(t, b.do("POST", report, ownToken, map[string]any{"lease": lease, "seconds": []any{}}), http.StatusConflict)

	// The list says each ended run's outcome in brief, and narrows to a state or a test.
	runs := func(query string) []any {
		t.Helper()
		r := b.do("GET", "/v1/runs"+query, u.access, nil)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		return r.json(t)["items"].([]any)
	}
	finished := runs("?state=finished")
	require.Len(t, finished, 1)
	require.Equal(t, map[string]any{"requests": 160.0, "error_rate": 0.0, "p95_ms": finished[0].(map[string]any)["outcome"].(map[string]any)["p95_ms"],
		"thresholds_failed": 0.0, "generator_limited": false, "incomplete": false}, finished[0].(map[string]any)["outcome"])
	require.InDelta(t, 30, finished[0].(map[string]any)["outcome"].(map[string]any)["p95_ms"], 0.1)
	require.EqualValues(t, 6, finished[0].(map[string]any)["vus"])
	require.Empty(t, runs("?state=failed"))
	require.Len(t, runs("?state=failed&state=finished"), 1, "any of several states")
	require.Empty(t, runs("?state=queued&state=running"))
	require.Empty(t, runs("?test_id="+uuid.NewString()), "its script is no test's")
	requireProblem(t, b.do("GET", "/v1/runs?state=bogus", u.access, nil), http.StatusBadRequest)
}

func TestAReportThatWouldCostTheServerMemoryIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, u := b.adminAndUser()
	_, token := b.registerAgent("/v1/agents", u.access, "mine", nil)
	_, reports, leases := b.startedRun(u, b.addScript(u, smokeScript), token)
	snap := &metrics.Snapshot{Start: time.Unix(1_700_000_000, 0), Duration: time.Second, Labels: map[metrics.Key]*metrics.Stats{}}
	for i := range 1001 {
		st := metrics.NewStats()
		st.Requests = 1
		st.Latency.Record(time.Millisecond)
		snap.Labels[metrics.RequestKey(fmt.Sprintf("l%04d", i))] = st
	}
	enc, err := snap.MarshalBinary()
	require.NoError(t, err)
	sec := second(t, 0, "get home", 1, time.Millisecond)
	sec["snapshot"] = base64.StdEncoding.EncodeToString(enc)
	p := requireProblem(t, b.do("POST", reports[0], token, map[string]any{"lease": leases[0], "seconds": []any{sec}}), http.StatusUnprocessableEntity)
	require.Contains(t, requireField(t, p, "seconds[0].snapshot"), "at most 1000")
	sec["snapshot"] = base64.StdEncoding.EncodeToString([]byte("not a snapshot"))
	p = requireProblem(t, b.do("POST", reports[0], token, map[string]any{"lease": leases[0], "seconds": []any{sec}}), http.StatusUnprocessableEntity)
	requireField(t, p, "seconds[0].snapshot")
	// A second past any run's length would have every reader of the run walk the gap.
	late := second(t, fleet.MaxSecondIndex+1, "get home", 1, time.Millisecond)
	p = requireProblem(t, b.do("POST", reports[0], token, map[string]any{"lease": leases[0], "seconds": []any{late}}), http.StatusUnprocessableEntity)
	require.Contains(t, requireField(t, p, "seconds[0].index"), "no run lasts longer")
	// Health that no generator measured in a second would overflow the run's sums.
	for field, v := range map[string]any{"dropped": int64(math.MaxInt64), "late": -1, "cpu": -0.5, "lateness_max_ns": int64(math.MaxInt64)} {
		bad := second(t, 0, "get home", 1, time.Millisecond)
		bad["health"].(map[string]any)[field] = v
		p = requireProblem(t, b.do("POST", reports[0], token, map[string]any{"lease": leases[0], "seconds": []any{bad}}), http.StatusUnprocessableEntity)
		require.Contains(t, fmt.Sprint(p["errors"]), "seconds[0].health", "%s: %v", field, p)
		require.Contains(t, fmt.Sprint(p["errors"]), field)
	}
}

func TestRunAdmissionNamesTheLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, u := b.adminAndUser()
	_, token := b.registerAgent("/v1/admin/agents", admin.access, "demo", map[string]any{"max_vus": 500, "max_run_duration_seconds": 300})
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", token, hello).status)
	script := b.addScript(u, smokeScript)

	violation := func(body map[string]any) map[string]any {
		t.Helper()
		body["script_id"] = script
		p := requireProblem(t, b.do("POST", "/v1/runs", u.access, body), http.StatusUnprocessableEntity)
		vs := p["violations"].([]any)
		require.Len(t, vs, 1, "%v", p)
		return vs[0].(map[string]any)
	}
	// The demo license allows 100 VUs; the demo agent 5 minutes a job.
	// Each says whose limit it is.
	license, agent := "your demo license", `the shared agent "demo", for each run on it`
	require.Equal(t, map[string]any{"limit": "max_vus", "allowed": 100.0, "requested": 101.0, "set_by": license}, violation(map[string]any{"vus": 101}))
	require.Equal(t, map[string]any{"limit": "max_run_duration_seconds", "allowed": 300.0, "requested": 360.0, "set_by": agent},
		violation(map[string]any{"duration_seconds": 360}))
	// Stages are the load: their durations add up to the run's, and their max VUs are vus.
	stages := []any{map[string]any{"ramp_to": 50, "duration_seconds": 200}, map[string]any{"rate": 50, "duration_seconds": 160}}
	require.Equal(t, map[string]any{"limit": "max_run_duration_seconds", "allowed": 300.0, "requested": 360.0, "set_by": agent},
		violation(map[string]any{"stages": stages}))
	require.Equal(t, map[string]any{"limit": "max_vus", "allowed": 100.0, "requested": 101.0, "set_by": license},
		violation(map[string]any{"stages": stages[:1], "vus": 101}))
	for field, body := range map[string]map[string]any{
		"stages[0]":          {"stages": []any{map[string]any{"rate": 5, "ramp_to": 6, "duration_seconds": 10}}},
		"stages":             {"stages": []any{map[string]any{"rate": 0, "duration_seconds": 10}}},
		"stages ":            {"stages": stages, "rate": 5},
		"stages  ":           {"stages": stages, "duration_seconds": 10},
		"stages[0].rate ":    {"stages": []any{map[string]any{"rate": -1, "duration_seconds": 10}}},
		"stages[0].duration": {"stages": []any{map[string]any{"rate": 1, "duration_seconds": 0}}},
	} {
		body["script_id"] = script
		p := requireProblem(t, b.do("POST", "/v1/runs", u.access, body), http.StatusUnprocessableEntity)
		require.Contains(t, fmt.Sprint(p), strings.TrimSpace(field), "%s: %v", field, p)
	}
	staged := b.do("POST", "/v1/runs", u.access, map[string]any{"script_id": script, "stages": stages[:1], "vus": 10})
	require.Equal(t, http.StatusCreated, staged.status, "body: %s", staged.body)
	require.Equal(t, map[string]any{"vus": 10.0, "stages": []any{map[string]any{"ramp_to": 50.0, "duration_seconds": 200.0}}}, staged.json(t)["load"])
	require.Equal(t, http.StatusOK, b.do("POST", "/v1/runs/"+staged.json(t)["id"].(string)+"/cancel", u.access, nil).status)

	// Two runs at a time on the demo license: the third is refused, a canceled one frees its place.
	// An agent takes one run at a time: two more are online.
	for _, name := range []string{"demo-2", "demo-3"} {
		_, token := b.registerAgent("/v1/admin/agents", admin.access, name, map[string]any{"max_vus": 500, "max_run_duration_seconds": 300})
		require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", token, hello).status)
	}
	var ids []string
	for range 2 {
		r := b.do("POST", "/v1/runs", u.access, map[string]any{"script_id": script})
		require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
		ids = append(ids, r.json(t)["id"].(string))
	}
	require.Equal(t, map[string]any{"limit": "max_concurrent_runs", "allowed": 2.0, "requested": 3.0, "set_by": license}, violation(map[string]any{}))
	canceled := b.do("POST", "/v1/runs/"+ids[0]+"/cancel", u.access, nil)
	require.Equal(t, http.StatusOK, canceled.status, "body: %s", canceled.body)
	require.Equal(t, "canceled", canceled.json(t)["state"])
	requireProblem(t, b.do("POST", "/v1/runs/"+ids[0]+"/cancel", u.access, nil), http.StatusConflict)

	// The same idempotency key gives the same run, and no second one.
	key := []string{"Idempotency-Key", "k-1"}
	first := b.do("POST", "/v1/runs", u.access, map[string]any{"script_id": script}, key...)
	require.Equal(t, http.StatusCreated, first.status, "body: %s", first.body)
	again := b.do("POST", "/v1/runs", u.access, map[string]any{"script_id": script}, key...)
	require.Equal(t, http.StatusCreated, again.status, "body: %s", again.body)
	require.Equal(t, first.json(t)["id"], again.json(t)["id"])
	// The key reused for another request is refused, naming the key and the run it made.
	other := requireProblem(t, b.do("POST", "/v1/runs", u.access, map[string]any{"script_id": script, "vus": 2}, key...), http.StatusUnprocessableEntity)
	require.Contains(t, fmt.Sprint(other["errors"]), "Idempotency-Key")
	require.Contains(t, fmt.Sprint(other["errors"]), first.json(t)["id"].(string))
}

func TestRunsAndAgentsAreTheirOwnersAlone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, u := b.adminAndUser()
	ownID, ownToken := b.registerAgent("/v1/agents", u.access, "mine", nil)
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", ownToken, hello).status)
	script := b.addScript(u, smokeScript)
	r := b.do("POST", "/v1/runs", u.access, map[string]any{"script_id": script})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	runID := r.json(t)["id"].(string)

	// The admin is another user here: the user's run, script and agent are not found.
	for _, path := range []string{"/v1/runs/" + runID, "/v1/runs/" + runID + "/summary", "/v1/agents/" + ownID} {
		requireProblem(t, b.do("GET", path, admin.access, nil), http.StatusNotFound)
	}
	requireProblem(t, b.do("POST", "/v1/runs/"+runID+"/cancel", admin.access, nil), http.StatusNotFound)
	requireProblem(t, b.do("DELETE", "/v1/agents/"+ownID, admin.access, nil), http.StatusNotFound)
	requireProblem(t, b.do("POST", "/v1/runs", admin.access, map[string]any{"script_id": script}), http.StatusNotFound)
	require.Empty(t, b.do("GET", "/v1/runs", admin.access, nil).json(t)["items"])
	// The owner's list shows the run with its shard.
	mine := b.do("GET", "/v1/runs", u.access, nil).json(t)["items"].([]any)
	require.Len(t, mine, 1)
	require.Len(t, mine[0].(map[string]any)["shards"], 1)
	// ... nor may the admin run on the user's private agent.
	requireProblem(t, b.do("POST", "/v1/runs", admin.access, map[string]any{"script_id": script, "agent_ids": []string{ownID}}), http.StatusNotFound)

	// Tokens do not cross: a user's token is no agent's, an agent's no user's.
	requireProblem(t, b.do("POST", "/v1/agent/lease", u.access, hello), http.StatusUnauthorized)
	requireProblem(t, b.do("GET", "/v1/runs", ownToken, nil), http.StatusUnauthorized)
	// An agent of a protocol older than the server accepts is told which it needs.
	old := map[string]any{"protocol": barrage.MinAgentProtocol - 1, "version": "v0.0.1", "cores": 1}
	p := requireProblem(t, b.do("POST", "/v1/agent/lease", ownToken, old), http.StatusUpgradeRequired)
	require.Contains(t, p["detail"], fmt.Sprintf("protocol %d", barrage.MinAgentProtocol))

	// A removed agent's token stops working.
	require.Equal(t, http.StatusNoContent, b.do("DELETE", "/v1/agents/"+ownID, u.access, nil).status)
	requireProblem(t, b.do("POST", "/v1/agent/lease", ownToken, hello), http.StatusUnauthorized)
}

// startedRun queues a run of script on the user's agents (their tokens), has each lease its
// shard, and returns the run's id and each agent's report path and lease, in the agents' order.
func (b *testBundle) startedRun(u user, script string, tokens ...string) (string, []string, []any) {
	b.t.Helper()
	for _, tok := range tokens {
		require.Equal(b.t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", tok, hello).status)
	}
	r := b.do("POST", "/v1/runs", u.access, map[string]any{"script_id": script, "agents": len(tokens)})
	require.Equal(b.t, http.StatusCreated, r.status, "body: %s", r.body)
	var paths []string
	var leases []any
	for _, tok := range tokens {
		job := b.do("POST", "/v1/agent/lease", tok, hello)
		require.Equal(b.t, http.StatusOK, job.status, "body: %s", job.body)
		j := job.json(b.t)["shard"].(map[string]any)
		paths = append(paths, "/v1/agent/shards/"+j["shard_id"].(string)+"/report")
		leases = append(leases, j["lease"])
	}
	return r.json(b.t)["id"].(string), paths, leases
}

// sseEvent is one Server-Sent Event.
type sseEvent struct {
	id, event string
	data      map[string]any
}

func parseSSE(t *testing.T, body []byte) []sseEvent {
	t.Helper()
	var out []sseEvent
	for _, block := range strings.Split(strings.TrimSpace(string(body)), "\n\n") {
		var ev sseEvent
		for _, line := range strings.Split(block, "\n") {
			k, v, _ := strings.Cut(line, ": ")
			switch k {
			case "id":
				ev.id = v
			case "event":
				ev.event = v
			case "data":
				require.NoError(t, json.Unmarshal([]byte(v), &ev.data), line)
			}
		}
		out = append(out, ev)
	}
	return out
}

func TestLiveStreamsTheSecondsMergedAcrossAgents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, u := b.adminAndUser()
	_, one := b.registerAgent("/v1/agents", u.access, "one", nil)
	_, two := b.registerAgent("/v1/agents", u.access, "two", nil)
	runID, reports, leases := b.startedRun(u, b.addScript(u, smokeScript), one, two)

	report := func(i int, body map[string]any) {
		t.Helper()
		body["lease"] = leases[i]
		r := b.do("POST", reports[i], []string{one, two}[i], body)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	}
	report(0, map[string]any{"seconds": []any{second(t, 0, "get home", 10, 5*time.Millisecond), second(t, 1, "get home", 20, 5*time.Millisecond)}})
	report(1, map[string]any{"seconds": []any{second(t, 0, "get home", 30, 50*time.Millisecond)}})
	report(1, map[string]any{"seconds": []any{second(t, 1, "get home", 40, 50*time.Millisecond)}, "end": map[string]any{"reason": "finished"}})
	report(0, map[string]any{"seconds": []any{}, "end": map[string]any{"reason": "finished"}})

	live := b.do("GET", "/v1/runs/"+runID+"/live", u.access, nil)
	require.Equal(t, http.StatusOK, live.status, "body: %s", live.body)
	require.Equal(t, "text/event-stream", live.header.Get("Content-Type"))
	events := parseSSE(t, live.body)
	var kinds []string
	for _, ev := range events {
		kinds = append(kinds, ev.event)
	}
	require.Equal(t, []string{"second", "second", "end"}, kinds, "the seconds, then the end, last: a follower that stops at the end has every second")
	require.Equal(t, "0", events[0].id)
	require.EqualValues(t, 40, events[0].data["requests"], "both agents' first second")
	require.EqualValues(t, 60, events[1].data["requests"])
	require.Len(t, events[1].data["agents"], 2)
	require.InDelta(t, 50, events[1].data["p99_ms"], 0.1)
	labels := events[1].data["labels"].([]any)
	require.Len(t, labels, 1, "each request's second, for the live page's table")
	home := labels[0].(map[string]any)
	require.Equal(t, "get home", home["name"])
	require.EqualValues(t, 60, home["requests"])
	require.EqualValues(t, 0, home["errors"])
	require.InDelta(t, 50, home["p99_ms"], 0.1)
	require.Equal(t, "finished", events[2].data["state"])

	// The script's threshold as it stands, on every second so far: p95 < 300ms holds.
	standing := events[1].data["thresholds"].([]any)
	require.Len(t, standing, 1)
	p95 := standing[0].(map[string]any)
	require.Equal(t, "p95 < 300ms", p95["check"])
	require.Equal(t, true, p95["passed"])
	require.InDelta(t, 0.05, p95["observed"], 0.001, "the run's p95 so far, in seconds: the slower agent's 50 ms")

	// Reconnecting after second 0 resumes with second 1, judged on the run from its start.
	again := parseSSE(t, b.do("GET", "/v1/runs/"+runID+"/live", u.access, nil, "Last-Event-ID", "0").body)
	require.Equal(t, "1", again[0].id)
	require.Len(t, again, 2)
	require.Equal(t, events[1].data["thresholds"], again[0].data["thresholds"])
	requireProblem(t, b.do("GET", "/v1/runs/"+runID+"/live", u.access, nil, "Last-Event-ID", "x"), http.StatusBadRequest)
}

// A live stream outlives its request and costs its server a read each second: a user may hold
// so many open, the server so many of everyone's (429 past either), and each ends when its
// time is up (its credential's expiry, or the most a stream lasts), saying so, for its client
// to reconnect.
func TestLiveStreamsAreBoundedInNumberAndLength(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{asServed: true, liveStreams: httpapi.LiveStreams{PerUser: 2, Total: 3, Lifetime: 2 * time.Second}})
	admin, u := b.adminAndUser()
	v := b.signup(b.invite(admin, map[string]any{"license": map[string]any{"template": "demo"}}), "v@example.com")
	_, uAgent := b.registerAgent("/v1/agents", u.access, "u's", nil)
	_, vAgent := b.registerAgent("/v1/agents", v.access, "v's", nil)
	uRun, _, _ := b.startedRun(u, b.addScript(u, smokeScript), uAgent) // running, and reporting nothing: its streams stay open
	vRun, _, _ := b.startedRun(v, b.addScript(v, smokeScript), vAgent)
	open := func(who user, run string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, b.srv.URL+"/v1/runs/"+run+"/live", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+who.access)
		res, err := b.srv.Client().Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { res.Body.Close() })
		return res
	}
	first := open(u, uRun)
	require.Equal(t, http.StatusOK, first.StatusCode)
	require.Equal(t, http.StatusOK, open(u, uRun).StatusCode)
	third := open(u, uRun)
	require.Equal(t, http.StatusTooManyRequests, third.StatusCode, "a user's third stream")
	require.NotEmpty(t, third.Header.Get("Retry-After"))
	require.Equal(t, http.StatusOK, open(v, vRun).StatusCode, "another user's first")
	require.Equal(t, http.StatusTooManyRequests, open(v, vRun).StatusCode, "past the server's three")

	// The first stream's time is up after two seconds: it says so and ends, and its place is
	// free again.
	body, err := io.ReadAll(first.Body)
	require.NoError(t, err)
	require.Contains(t, string(body), "event: error")
	require.Contains(t, string(body), "time is up")
	require.Eventually(t, func() bool {
		res := open(v, vRun)
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}, 10*time.Second, 20*time.Millisecond, "the ended stream's place is another's")
}

// A server that begins to shut down ends its live streams at once, telling their clients to
// reconnect: behind a balancer they go on from another replica, and the shutdown does not wait
// its whole grace for streams that would last the run.
func TestALiveStreamEndsWhenItsServerShutsDown(t *testing.T) {
	t.Parallel()
	draining, drain := context.WithCancel(context.Background())
	defer drain()
	b := setup(t, setupOpts{asServed: true, draining: draining})
	_, u := b.adminAndUser()
	_, agent := b.registerAgent("/v1/agents", u.access, "one", nil)
	runID, _, _ := b.startedRun(u, b.addScript(u, smokeScript), agent) // running, reporting nothing: its stream stays open
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, b.srv.URL+"/v1/runs/"+runID+"/live", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+u.access)
	res, err := b.srv.Client().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	// The run's state, the stream's first event, has come: the stream is following the run.
	first, err := bufio.NewReader(res.Body).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "event: state\n", first)

	drain()
	rest, err := io.ReadAll(res.Body)
	require.NoError(t, err, "the stream ends")
	require.Contains(t, string(rest), "event: error\ndata: {\"detail\":\"this server is shutting down; reconnect with Last-Event-ID\"}")
}

func TestAnAbortingThresholdOnTheMergedSecondsStopsEveryShard(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, u := b.adminAndUser()
	_, one := b.registerAgent("/v1/agents", u.access, "one", nil)
	_, two := b.registerAgent("/v1/agents", u.access, "two", nil)
	src := strings.Replace(smokeScript, "  - p95 < 300ms\n", "  - { check: \"error_rate < 10%\", abort: true }\n", 1)
	runID, reports, leases := b.startedRun(u, b.addScript(u, src), one, two)
	tokens := []string{one, two}

	// Agent one alone is at 5% errors, agent two at 15%: merged, 10% breaks "< 10%".
	for i, failed := range []int{5, 15} {
		r := b.do("POST", reports[i], tokens[i], map[string]any{"lease": leases[i], "seconds": []any{second(t, 0, "get home", 100, time.Millisecond, failed)}})
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	}
	require.NoError(t, b.ctl.Runs.Reap(context.Background()))
	for i := range 2 {
		r := b.do("POST", reports[i], tokens[i], map[string]any{"lease": leases[i], "seconds": []any{}})
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		stop := r.json(t)["stop"].(map[string]any)
		require.Equal(t, "aborted_threshold", stop["reason"])
		require.Contains(t, stop["detail"], "error_rate < 10%")
		end := b.do("POST", reports[i], tokens[i], map[string]any{"lease": leases[i], "seconds": []any{},
			"end": map[string]any{"reason": "aborted_threshold", "detail": stop["detail"]}})
		require.Equal(t, http.StatusOK, end.status, "body: %s", end.body)
	}
	got := b.do("GET", "/v1/runs/"+runID, u.access, nil).json(t)
	require.Equal(t, "aborted_threshold", got["state"])
	require.Contains(t, got["reason"], "error_rate < 10%")
}

func TestAPingGoesThroughTheAgent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, u := b.adminAndUser()
	id, token := b.registerAgent("/v1/agents", u.access, "mine", nil)
	requireProblem(t, b.do("POST", "/v1/agents/"+id+"/ping", u.access, nil), http.StatusConflict) // offline

	// The agent waits for work; the ping wakes it; it answers.
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", token, hello).status)
	answered := make(chan error, 1)
	go func() {
		w := b.do("POST", "/v1/agent/lease", token, map[string]any{"protocol": barrage.AgentProtocol, "version": "test", "cores": 2, "wait_seconds": 5})
		if w.status != http.StatusOK {
			answered <- fmt.Errorf("lease answered %d: %s", w.status, w.body)
			return
		}
		var work struct{ Pings []string }
		if err := json.Unmarshal(w.body, &work); err != nil || len(work.Pings) != 1 {
			answered <- fmt.Errorf("want one ping: %s", w.body)
			return
		}
		if r := b.do("POST", "/v1/agent/pings/"+work.Pings[0], token, nil); r.status != http.StatusNoContent {
			answered <- fmt.Errorf("answer: %d %s", r.status, r.body)
			return
		}
		answered <- nil
	}()
	ping := b.do("POST", "/v1/agents/"+id+"/ping", u.access, nil)
	require.NoError(t, <-answered)
	require.Equal(t, http.StatusOK, ping.status, "body: %s", ping.body)
	p := ping.json(t)
	require.Equal(t, id, p["agent_id"])
	require.Positive(t, p["round_trip_ms"])

	// Another user's agent is not found; nor is a ping the agent was never given.
	requireProblem(t, b.do("POST", "/v1/agents/"+id+"/ping", admin.access, nil), http.StatusNotFound)
	requireProblem(t, b.do("POST", "/v1/agent/pings/"+uuid.NewString(), token, nil), http.StatusNotFound)
}

func TestManyAgentsReportAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, u := b.adminAndUser()
	const n = 12
	tokens := make([]string, n)
	for i := range tokens {
		_, tokens[i] = b.registerAgent("/v1/agents", u.access, fmt.Sprintf("a%02d", i), nil)
	}
	runID, reports, leases := b.startedRun(u, b.addScript(u, smokeScript), tokens...)

	// Every agent reports the same seconds at the same moment, as real ones do: no report may
	// fail (a lock taken in two steps once deadlocked them), and each is counted once.
	for sec := range int64(3) {
		var wg sync.WaitGroup
		statuses := make([]int, n)
		for i := range n {
			body := map[string]any{"lease": leases[i], "seconds": []any{second(t, sec, "get home", 10, time.Millisecond)}}
			if sec == 2 {
				body["end"] = map[string]any{"reason": "finished"}
			}
			data, err := json.Marshal(body)
			require.NoError(t, err)
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = b.post(reports[i], tokens[i], data)
			}()
		}
		wg.Wait()
		for i, st := range statuses {
			require.Equal(t, http.StatusOK, st, "agent %d, second %d", i, sec)
		}
	}
	got := b.do("GET", "/v1/runs/"+runID+"/summary", u.access, nil)
	require.Equal(t, http.StatusOK, got.status, "body: %s", got.body)
	require.EqualValues(t, n*3*10, got.json(t)["total"].(map[string]any)["count"])
}

// post sends a JSON body and returns the status, 0 when the request failed; safe to call from
// several goroutines (it does not stop the test).
func (b *testBundle) post(path, bearer string, body []byte) int {
	req, err := http.NewRequest("POST", b.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+bearer)
	res, err := b.srv.Client().Do(req)
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode
}

func TestAReplicaThatJustStartedGivesAgentsTimeBeforeCallingThemLost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, u := b.adminAndUser()
	_, token := b.registerAgent("/v1/agents", u.access, "mine", nil)
	runID, reports, leases := b.startedRun(u, b.addScript(u, smokeScript), token)
	r := b.do("POST", reports[0], token, map[string]any{"lease": leases[0], "seconds": []any{second(t, 0, "get home", 1, time.Millisecond)}})
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)

	// The agent falls silent; twenty seconds later a replica starts (all were down meanwhile).
	clock := controltest.NewClock(time.Now().Add(20 * time.Second))
	replica := control.New(b.store, slog.New(slog.DiscardHandler), control.Config{Now: clock.Now, LostAfter: 8 * time.Second})
	shardState := func() string {
		return b.do("GET", "/v1/runs/"+runID, u.access, nil).json(t)["shards"].([]any)[0].(map[string]any)["state"].(string)
	}
	require.NoError(t, replica.Runs.Reap(context.Background()))
	require.Equal(t, "running", shardState(), "a replica that just started does not call the agent lost")
	// Once the replica has been up that long, the silence is the agent's.
	clock.Add(8 * time.Second)
	require.NoError(t, replica.Runs.Reap(context.Background()))
	require.Equal(t, "lost", shardState())
}

// Runs asked for at once are admitted one after the other: the concurrent-run cap holds (three
// at once on three idle agents, with a cap of two, made three runs), and an agent takes one
// run at a time (two users at once on the one idle agent both got it, one run queued behind the
// other). A busy agent named in agent_ids is refused, not queued behind.
func TestRunsAskedForAtOnceAreAdmittedOneAfterTheOther(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, u := b.adminAndUser()
	v := b.signup(b.invite(admin, map[string]any{"license": map[string]any{"template": "demo"}}), "other@example.com")
	var agents []string
	for i := range 3 {
		id, token := b.registerAgent("/v1/agents", u.access, fmt.Sprintf("mine-%d", i), nil)
		require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", token, hello).status)
		agents = append(agents, id)
	}
	script := b.addScript(u, smokeScript)
	all := func(n int, ask func(i int) response) []response {
		out := make([]response, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { out[i] = ask(i) })
		}
		wg.Wait()
		return out
	}
	statuses := func(rs []response) map[int]int {
		m := map[int]int{}
		for _, r := range rs {
			m[r.status]++
		}
		return m
	}
	rs := all(3, func(i int) response {
		return b.do("POST", "/v1/runs", u.access, map[string]any{"script_id": script, "agent_ids": []string{agents[i]}})
	})
	require.Equal(t, map[int]int{http.StatusCreated: 2, http.StatusUnprocessableEntity: 1}, statuses(rs))
	for _, r := range rs {
		if r.status != http.StatusCreated {
			require.Contains(t, r.json(t)["detail"], "max_concurrent_runs: allowed 2")
		}
	}

	// The shared demo agent, asked for by two users at once.
	demo, demoToken := b.registerAgent("/v1/admin/agents", admin.access, "demo", nil)
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", demoToken, hello).status)
	scripts := []string{b.addScript(v, smokeScript), b.addScript(admin, smokeScript)}
	owners := []user{v, admin}
	rs = all(2, func(i int) response {
		return b.do("POST", "/v1/runs", owners[i].access, map[string]any{"script_id": scripts[i], "agent_ids": []string{demo}})
	})
	require.Equal(t, map[int]int{http.StatusCreated: 1, http.StatusUnprocessableEntity: 1}, statuses(rs))
	for _, r := range rs {
		if r.status != http.StatusCreated {
			require.Contains(t, requireField(t, r.json(t), "agent_ids[0]"), "busy with another run")
		}
	}
}

// Without agent_ids the server chooses: agents whose own limits admit the run first (an agent
// of 5-second runs refused a minute's run while another was idle), and again when an agent it
// chose took a run created at the same moment (one of two runs asked for at once failed with
// idle agents to spare).
func TestTheServerChoosesAgentsThatCanTakeTheRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, u := b.adminAndUser()
	shortID, shortToken := b.registerAgent("/v1/agents", u.access, "short", map[string]any{"max_run_duration_seconds": 5})
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", shortToken, hello).status)
	var others []string
	for _, name := range []string{"long-1", "long-2"} {
		id, token := b.registerAgent("/v1/agents", u.access, name, nil)
		require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", token, hello).status)
		others = append(others, id)
	}
	script := b.addScript(u, smokeScript) // 10 s
	rs := make([]response, 2)
	var wg sync.WaitGroup
	for i := range rs {
		wg.Go(func() { rs[i] = b.do("POST", "/v1/runs", u.access, map[string]any{"script_id": script}) })
	}
	wg.Wait()
	var used []string
	for _, r := range rs {
		require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
		used = append(used, r.json(t)["shards"].([]any)[0].(map[string]any)["agent_id"].(string))
	}
	require.ElementsMatch(t, others, used, "the two runs on the two agents that allow 10 s, not on %s", shortID)
}

// The server tells a run's stability from the seconds its agents reported: throughput that
// falls every other second is unstable; an even one is steady.
func TestARunsSummaryTellsItsStability(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, u := b.adminAndUser()
	_, token := b.registerAgent("/v1/agents", u.access, "mine", nil)
	script := b.addScript(u, smokeScript)
	var runs []string
	for _, tc := range []struct {
		counts   func(i int) int
		unstable bool
	}{{func(i int) int { return 400 + 300*(i%2) }, true}, {func(i int) int { return 500 + i%3 }, false}} {
		require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", token, hello).status)
		created := b.do("POST", "/v1/runs", u.access, map[string]any{"script_id": script, "vus": 4, "duration_seconds": 10})
		require.Equal(t, http.StatusCreated, created.status, "body: %s", created.body)
		runID := created.json(t)["id"].(string)
		j := b.do("POST", "/v1/agent/lease", token, hello).json(t)["shard"].(map[string]any)
		var secs []any
		for i := range 10 {
			secs = append(secs, second(t, int64(i), "get home", tc.counts(i), 10*time.Millisecond))
		}
		r := b.do("POST", "/v1/agent/shards/"+j["shard_id"].(string)+"/report", token, map[string]any{"lease": j["lease"], "seconds": secs,
			"end": map[string]any{"reason": "finished", "late_start_ms": 0, "result": map[string]any{}}})
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		sum := b.do("GET", "/v1/runs/"+runID+"/summary", u.access, nil)
		require.Equal(t, http.StatusOK, sum.status, "body: %s", sum.body)
		st := sum.json(t)["stability"].(map[string]any)
		require.Equal(t, tc.unstable, st["unstable"], "%v", st)
		require.EqualValues(t, 1, st["from_s"])
		require.EqualValues(t, 9, st["to_s"])
		// The live view says so too, over the latest seconds of the steady state: none in the
		// first second, whose load is starting, nor in the last.
		events := parseSSE(t, b.do("GET", "/v1/runs/"+runID+"/live", u.access, nil).body)
		require.NotContains(t, events[0].data, "stability")
		require.NotContains(t, events[4].data, "stability", "4 seconds of the steady state: too few")
		liveSt := events[8].data["stability"].(map[string]any)
		require.Equal(t, tc.unstable, liveSt["unstable"], "%v", liveSt)
		require.EqualValues(t, 1, liveSt["from_s"])
		require.EqualValues(t, 9, liveSt["to_s"])
		require.NotContains(t, events[9].data, "stability")
		runs = append(runs, runID)
	}

	// The steady run held against the unstable one: the same latencies, a rate within the
	// base's own swings.
	cmp := b.do("GET", "/v1/runs/"+runs[1]+"/compare?base="+runs[0]+"&max_p95_regression=5", u.access, nil)
	require.Equal(t, http.StatusOK, cmp.status, "body: %s", cmp.body)
	c := cmp.json(t)
	require.Equal(t, "unchanged", c["verdict"])
	total := c["total"].(map[string]any)
	require.Equal(t, "all requests", total["name"])
	p95 := total["changes"].([]any)[2].(map[string]any)
	require.Equal(t, "p95_ms", p95["metric"])
	require.InDelta(t, 0.05, p95["tolerance"], 1e-9)
	require.Len(t, c["requests"], 1)
	// Another user's run is not found; a run that goes on cannot be compared yet.
	requireProblem(t, b.do("GET", "/v1/runs/"+runs[1]+"/compare?base="+runs[0], admin.access, nil), http.StatusNotFound)
	requireProblem(t, b.do("GET", "/v1/runs/"+runs[1]+"/compare?base=nope", u.access, nil), http.StatusBadRequest)
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", token, hello).status)
	going := b.do("POST", "/v1/runs", u.access, map[string]any{"script_id": script, "vus": 4, "duration_seconds": 10}).json(t)["id"].(string)
	requireProblem(t, b.do("GET", "/v1/runs/"+going+"/compare?base="+runs[0], u.access, nil), http.StatusConflict)

	// The report on the unstable run says so and draws its seconds, with the steady run as the
	// base; its own policy lets its inline charts run and nothing be fetched.
	rep := b.do("GET", "/v1/runs/"+runs[0]+"/report?base="+runs[1], u.access, nil)
	require.Equal(t, http.StatusOK, rep.status, "body: %s", rep.body)
	require.Equal(t, "text/html; charset=utf-8", rep.header.Get("Content-Type"))
	require.Equal(t, httpapi.ServedReportPolicy, rep.header.Get("Content-Security-Policy"))
	require.Contains(t, rep.header.Get("Content-Disposition"), "run-"+runs[0]+".html")
	page := string(rep.body)
	require.Contains(t, page, "Unstable throughput")
	require.Contains(t, page, "Against run "+runs[1]+":")
	require.Contains(t, page, "<td>get home</td>")
	require.Contains(t, page, `"rps":[400,700,400,`)
	p := reporttest.Open(t, rep.body)
	require.Empty(t, p.Fetched)
	_, charts := p.Ink()
	require.Equal(t, 3, charts, "requests/s, latency and VUs: no request failed")
	requireProblem(t, b.do("GET", "/v1/runs/"+runs[0]+"/report", admin.access, nil), http.StatusNotFound)
	requireProblem(t, b.do("GET", "/v1/runs/"+runs[0]+"/report?base="+going, u.access, nil), http.StatusConflict)
	requireProblem(t, b.do("GET", "/v1/runs/"+going+"/report", u.access, nil), http.StatusConflict)
}

// The shard that scrapes a run's monitors sends their values with its seconds: the server keeps
// them, and the summary names an iowait-bound storage as the cause of an unstable throughput.
// Values it cannot keep are refused, naming the field.
func TestAgentsReportTheTargetsMetrics(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, u := b.adminAndUser()
	_, token := b.registerAgent("/v1/agents", u.access, "mine", nil)
	script := b.addScript(u, smokeScript+`monitors:
  - name: node
    url: http://127.0.0.1:9100/metrics
    series: [ 'node_cpu_seconds_total{mode="iowait"}' ]
`)
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", token, hello).status)
	created := b.do("POST", "/v1/runs", u.access, map[string]any{"script_id": script, "vus": 4, "duration_seconds": 10})
	require.Equal(t, http.StatusCreated, created.status, "body: %s", created.body)
	runID := created.json(t)["id"].(string)
	j := b.do("POST", "/v1/agent/lease", token, hello).json(t)["shard"].(map[string]any)
	report := func(secs []any, end bool) response {
		body := map[string]any{"lease": j["lease"], "seconds": secs}
		if end {
			body["end"] = map[string]any{"reason": "finished", "late_start_ms": 0, "result": map[string]any{"iterations": 1234}}
		}
		return b.do("POST", "/v1/agent/shards/"+j["shard_id"].(string)+"/report", token, body)
	}

	tooMany := second(t, 0, "get home", 10, time.Millisecond)
	units := make([]any, 129)
	for i := range units {
		units[i] = "value"
	}
	tooMany["monitors"], tooMany["monitor_units"] = make([]any, 129), units
	requireField(t, requireProblem(t, report([]any{tooMany}, false), http.StatusUnprocessableEntity), "seconds[0].monitors")
	unitless := second(t, 0, "get home", 10, time.Millisecond)
	unitless["monitors"] = []any{1.5}
	requireField(t, requireProblem(t, report([]any{unitless}, false), http.StatusUnprocessableEntity), "seconds[0].monitor_units")

	var secs []any
	for i := range 10 {
		sec := second(t, int64(i), "get home", 400+300*(i%2), 10*time.Millisecond)
		sec["monitors"], sec["monitor_units"] = []any{70 + i%2}, []any{"percent"}
		if i == 3 {
			sec["monitors"] = []any{nil} // a failed scrape
		}
		secs = append(secs, sec)
	}
	r := report(secs, true)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	sum := b.do("GET", "/v1/runs/"+runID+"/summary", u.access, nil)
	require.Equal(t, http.StatusOK, sum.status, "body: %s", sum.body)
	st := sum.json(t)["stability"].(map[string]any)
	require.Equal(t, true, st["unstable"])
	require.Equal(t, []any{`node: node_cpu_seconds_total{mode="iowait"} averaged 70% of the CPU time: the target was waiting on its storage`}, st["causes"])
	rep := b.do("GET", "/v1/runs/"+runID+"/report", u.access, nil)
	require.Equal(t, http.StatusOK, rep.status, "body: %s", rep.body)
	require.Contains(t, string(rep.body), `"values":[[70,71,70,null,70,71,70,71,70,71]]`)
	require.Contains(t, string(rep.body), "waiting on its storage")
	require.Contains(t, string(rep.body), "· 1234 iterations", "the agents' own count")
	require.Contains(t, string(rep.body), "<td>mine (", "the agent by its name")
}

// A sweep is a run of one agent: its job carries the levels, its agent sends back what each
// measured, and the server fits and judges them: the knee of a target that serves 8 at a time.
func TestASweepRunIsJudgedByTheServer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, u := b.adminAndUser()
	_, token := b.registerAgent("/v1/agents", u.access, "mine", nil)
	script := b.addScript(u, smokeScript)
	sweepBody := map[string]any{"script_id": script, "sweep": map[string]any{"vus": []int{2, 4, 8, 16, 32}, "step_seconds": 10}}

	two := map[string]any{"script_id": script, "agents": 2, "sweep": sweepBody["sweep"]}
	requireField(t, requireProblem(t, b.do("POST", "/v1/runs", u.access, two), http.StatusUnprocessableEntity), "agents")
	mixed := map[string]any{"script_id": script, "vus": 4, "sweep": sweepBody["sweep"]}
	requireField(t, requireProblem(t, b.do("POST", "/v1/runs", u.access, mixed), http.StatusUnprocessableEntity), "sweep")
	down := map[string]any{"script_id": script, "sweep": map[string]any{"vus": []int{8, 4}, "step_seconds": 10}}
	requireField(t, requireProblem(t, b.do("POST", "/v1/runs", u.access, down), http.StatusUnprocessableEntity), "sweep.vus[1]")

	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", token, hello).status)
	created := b.do("POST", "/v1/runs", u.access, sweepBody)
	require.Equal(t, http.StatusCreated, created.status, "body: %s", created.body)
	runID := created.json(t)["id"].(string)
	requireProblem(t, b.do("GET", "/v1/runs/"+runID+"/sweep", u.access, nil), http.StatusConflict)
	j := b.do("POST", "/v1/agent/lease", token, hello).json(t)["shard"].(map[string]any)
	require.Equal(t, map[string]any{"vus": []any{2.0, 4.0, 8.0, 16.0, 32.0}, "step_seconds": 10.0}, j["load"].(map[string]any)["sweep"])

	var levels []any
	for _, n := range []int{2, 4, 8, 16, 32} {
		x := float64(min(n, 8)) * 100 // 8 workers of 10 ms
		p95 := 10 * max(1, float64(n)/8)
		levels = append(levels, map[string]any{"vus": n, "seconds": 9, "requests": int(x * 9), "rps": x, "ok_rps": x, "p50_ms": p95,
			"p95_ms": p95, "p99_ms": p95, "error_rate": 0, "reliability": 1, "late_start": false, "verdict": map[string]any{"generator_limited": false}})
	}
	r := b.do("POST", "/v1/agent/shards/"+j["shard_id"].(string)+"/report", token, map[string]any{"lease": j["lease"],
		"seconds": []any{second(t, 0, "get home", 100, 10*time.Millisecond)},
		"end":     map[string]any{"reason": "finished", "late_start_ms": 0, "result": map[string]any{"sweep_levels": levels}}})
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)

	sw := b.do("GET", "/v1/runs/"+runID+"/sweep", u.access, nil)
	require.Equal(t, http.StatusOK, sw.status, "body: %s", sw.body)
	got := sw.json(t)
	require.EqualValues(t, 8, got["knee_vus"])
	require.EqualValues(t, 10, got["step_s"])
	require.Equal(t, "smoke", got["script"])
	require.Len(t, got["levels"], 5)
	require.NotNil(t, got["fit"])
	csv := b.do("GET", "/v1/runs/"+runID+"/sweep.csv", u.access, nil)
	require.Equal(t, http.StatusOK, csv.status)
	lines := strings.Split(strings.TrimSpace(string(csv.body)), "\n")
	require.Len(t, lines, 6)
	require.True(t, strings.HasPrefix(lines[3], "8,9.000,7200,800.0,800.0,"), lines[3])
	require.Contains(t, lines[3], ",true,")
	page := b.do("GET", "/v1/runs/"+runID+"/sweep.html", u.access, nil)
	require.Equal(t, http.StatusOK, page.status)
	require.Equal(t, httpapi.ServedReportPolicy, page.header.Get("Content-Security-Policy"))
	require.Contains(t, string(page.body), "Knee at 8 VUs")

	// Another user's sweep is not found, nor is the sweep of a run that is not one.
	requireProblem(t, b.do("GET", "/v1/runs/"+runID+"/sweep", admin.access, nil), http.StatusNotFound)
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", token, hello).status)
	plain := b.do("POST", "/v1/runs", u.access, map[string]any{"script_id": script})
	require.Equal(t, http.StatusCreated, plain.status, "body: %s", plain.body)
	requireProblem(t, b.do("GET", "/v1/runs/"+plain.json(t)["id"].(string)+"/sweep.csv", u.access, nil), http.StatusNotFound)
}

// An agent's account of a sweep that no generator could have measured is refused, naming the
// field, and what is judged is only the run's own levels.
func TestForgedSweepLevelsAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, u := b.adminAndUser()
	_, token := b.registerAgent("/v1/agents", u.access, "mine", nil)
	script := b.addScript(u, smokeScript)
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", token, hello).status)
	created := b.do("POST", "/v1/runs", u.access, map[string]any{"script_id": script, "sweep": map[string]any{"vus": []int{2, 4, 8}, "step_seconds": 5}})
	require.Equal(t, http.StatusCreated, created.status, "body: %s", created.body)
	runID := created.json(t)["id"].(string)
	j := b.do("POST", "/v1/agent/lease", token, hello).json(t)["shard"].(map[string]any)
	level := func(n int, rps float64) map[string]any {
		return map[string]any{"vus": n, "seconds": 4, "requests": 400, "rps": rps, "ok_rps": rps, "p50_ms": 1, "p95_ms": 2,
			"p99_ms": 3, "error_rate": 0, "reliability": 1, "late_start": false, "verdict": map[string]any{"generator_limited": false}}
	}
	end := func(levels ...any) response {
		return b.do("POST", "/v1/agent/shards/"+j["shard_id"].(string)+"/report", token, map[string]any{"lease": j["lease"], "seconds": []any{},
			"end": map[string]any{"reason": "finished", "result": map[string]any{"sweep_levels": levels}}})
	}
	requireField(t, requireProblem(t, end(level(2, 1e308)), http.StatusUnprocessableEntity), "end.result.sweep_levels[0].rps")
	inverted := level(2, 100)
	inverted["ok_rps"] = 200
	requireField(t, requireProblem(t, end(inverted), http.StatusUnprocessableEntity), "end.result.sweep_levels[0].ok_rps")
	requireField(t, requireProblem(t, end(level(4, 100), level(2, 100)), http.StatusUnprocessableEntity), "end.result.sweep_levels[1].vus")

	// Levels the run did not ask for are left out of what is judged.
	r := end(level(2, 100), level(3, 150), level(4, 200), level(8, 400))
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	sw := b.do("GET", "/v1/runs/"+runID+"/sweep", u.access, nil)
	require.Equal(t, http.StatusOK, sw.status, "body: %s", sw.body)
	var vus []float64
	for _, l := range sw.json(t)["levels"].([]any) {
		vus = append(vus, l.(map[string]any)["vus"].(float64))
	}
	require.Equal(t, []float64{2, 4, 8}, vus)
}

// An agent whose wall clock jumps (an hour ahead mid-run, then back behind the start) reports
// seconds stamped accordingly: the run is merged by the seconds' indexes on its one schedule,
// so its series stays whole and in order, each second merged across both agents, and its
// summary counts every request once.
func TestAnAgentWhoseClockJumpsIsMergedOnTheRunsSchedule(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, u := b.adminAndUser()
	var ids, tokens []string
	for _, name := range []string{"steady", "jumpy"} {
		id, token := b.registerAgent("/v1/agents", u.access, name, nil)
		require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", token, hello).status)
		ids, tokens = append(ids, id), append(tokens, token)
	}
	r := b.do("POST", "/v1/runs", u.access, map[string]any{"script_id": b.addScript(u, smokeScript), "agent_ids": ids, "duration_seconds": 5})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	runID := r.json(t)["id"].(string)
	now := time.Now()
	clocks := []func(idx int64) time.Time{
		func(idx int64) time.Time { return now.Add(time.Duration(idx) * time.Second) },
		func(idx int64) time.Time {
			switch {
			case idx >= 4:
				return now.Add(-time.Hour) // set back, before the run began
			case idx >= 2:
				return now.Add(time.Hour + time.Duration(idx)*time.Second) // jumped ahead
			}
			return now.Add(time.Duration(idx) * time.Second)
		},
	}
	for i, token := range tokens {
		job := b.do("POST", "/v1/agent/lease", token, hello).json(t)["shard"].(map[string]any)
		report := "/v1/agent/shards/" + job["shard_id"].(string) + "/report"
		for idx := range int64(5) {
			body := map[string]any{"lease": job["lease"], "seconds": []any{secondAt(t, clocks[i](idx), idx, "get home", 10*(i+1), 10*time.Millisecond)}}
			if idx == 4 {
				body["end"] = map[string]any{"reason": "finished"}
			}
			res := b.do("POST", report, token, body)
			require.Equal(t, http.StatusOK, res.status, "body: %s", res.body)
		}
	}
	require.Equal(t, "finished", b.do("GET", "/v1/runs/"+runID, u.access, nil).json(t)["state"])
	s := b.do("GET", "/v1/runs/"+runID+"/summary", u.access, nil).json(t)
	require.EqualValues(t, 5*(10+20), s["total"].(map[string]any)["count"], "every request counted once")
	require.EqualValues(t, 5, s["seconds"])
	var series struct {
		Seconds []struct {
			Index  int64
			Labels []struct{ Count int64 }
		}
	}
	require.NoError(t, json.Unmarshal(b.do("GET", "/v1/runs/"+runID+"/series", u.access, nil).body, &series))
	require.Len(t, series.Seconds, 5)
	for i, sec := range series.Seconds {
		require.EqualValues(t, i, sec.Index, "in order, none missing")
		require.EqualValues(t, 30, sec.Labels[0].Count, "second %d merged across both agents", i)
	}
}

// A run's env gives values to the environment variables its script reads, validated against
// them, stored in its manifest and handed to its agents (which speak protocol 8) alone.
func TestARunsEnvIsCheckedStoredAndHandedToItsAgent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, u := b.adminAndUser()
	_, token := b.registerAgent("/v1/agents", u.access, "mine", nil)
	script := b.addScript(u, `version: 1
name: aimed
variables:
  env:
    target: { from: TARGET_URL, default: "http://127.0.0.1:9" }
    token: API_TOKEN
session:
  groups:
    - name: g
      requests:
        - { name: r, url: "${target}/", headers: { Authorization: "Bearer ${token}" } }
load: { vus: 1, duration: 1s }
`)
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", token, hello).status)

	for name, c := range map[string]struct {
		env   map[string]any
		field string
	}{
		"a name the script does not read":       {map[string]any{"API_TOKEN": "t", "HTTPBIN_URL": "http://127.0.0.1:1"}, "env.HTTPBIN_URL"},
		"a variable without a default left out": {map[string]any{"TARGET_URL": "http://127.0.0.1:1"}, "env.API_TOKEN"},
		"a value past its bound":                {map[string]any{"API_TOKEN": strings.Repeat("x", 4097)}, "env.API_TOKEN"},
		"a name no environment has":             {map[string]any{"API_TOKEN": "t", "1BAD": "x"}, "env.1BAD"},
	} {
		t.Run(name, func(t *testing.T) {
			p := requireProblem(t, b.do("POST", "/v1/runs", u.access, map[string]any{"script_id": script, "env": c.env}), http.StatusUnprocessableEntity)
			requireField(t, p, c.field)
		})
	}
	var runs struct{ Items []any }
	require.NoError(t, json.Unmarshal(b.do("GET", "/v1/runs", u.access, nil).body, &runs))
	require.Empty(t, runs.Items, "nothing refused was stored")

	created := b.do("POST", "/v1/runs", u.access, map[string]any{"script_id": script,
		"env": map[string]any{"TARGET_URL": "http://127.0.0.1:8", "API_TOKEN": "abc"}})
	require.Equal(t, http.StatusCreated, created.status, "body: %s", created.body)
	run := created.json(t)
	require.Equal(t, map[string]any{"TARGET_URL": "http://127.0.0.1:8", "API_TOKEN": "abc"}, run["manifest"].(map[string]any)["env"])

	// An agent of protocol 7 cannot hand it to the script: its shard fails, saying why.
	old := map[string]any{"protocol": 7, "version": "old", "cores": 2, "wait_seconds": 0}
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", token, old).status)
	got := b.do("GET", "/v1/runs/"+run["id"].(string), u.access, nil).json(t)
	shard := got["shards"].([]any)[0].(map[string]any)
	require.Equal(t, "failed", shard["state"])
	require.Contains(t, shard["reason"], "cannot hand a run's environment")

	created = b.do("POST", "/v1/runs", u.access, map[string]any{"script_id": script, "env": map[string]any{"API_TOKEN": "abc"}})
	require.Equal(t, http.StatusCreated, created.status, "body: %s", created.body)
	job := b.do("POST", "/v1/agent/lease", token, hello)
	require.Equal(t, http.StatusOK, job.status, "body: %s", job.body)
	require.Equal(t, map[string]any{"API_TOKEN": "abc"}, job.json(t)["shard"].(map[string]any)["env"])
}

// A user's secrets: set and replaced, listed without values, another user's not theirs; a run
// whose script reads one is admitted only when its owner has it, and its agent is handed the
// value when it takes the shard; one deleted meanwhile fails the shard, saying which.
func TestSecretsAreWriteOnlyAndReachTheAgentAlone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, u := b.adminAndUser()
	_, token := b.registerAgent("/v1/agents", u.access, "mine", nil)
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", token, hello).status)

	set := b.do("POST", "/v1/secrets", u.access, map[string]any{"name": "API_TOKEN", "value": "v1v1"})
	require.Equal(t, http.StatusCreated, set.status, "body: %s", set.body)
	require.NotContains(t, string(set.body), "v1v1")
	again := b.do("POST", "/v1/secrets", u.access, map[string]any{"name": "API_TOKEN", "value": "hunter2"})
	require.Equal(t, http.StatusOK, again.status, "replaced: %s", again.body)
	list := b.do("GET", "/v1/secrets", u.access, nil)
	require.Equal(t, http.StatusOK, list.status)
	require.Len(t, list.json(t)["items"].([]any), 1)
	require.NotContains(t, string(list.body), "hunter2")
	require.Empty(t, b.do("GET", "/v1/secrets", admin.access, nil).json(t)["items"], "another user's are not theirs")
	requireProblem(t, b.do("DELETE", "/v1/secrets/API_TOKEN", admin.access, nil), http.StatusNotFound)
	for _, body := range []map[string]any{{"name": "1BAD", "value": "xxxx"}, {"name": "OK", "value": ""}, {"name": "OK", "value": "abc"},
		{"name": "OK", "value": strings.Repeat("x", 4097)}, {"name": "OK", "value": "ab\u0000cd"}, {"name": "OK", "value": "ab\r\nX-Evil: 1"}} {
		r := b.do("POST", "/v1/secrets", u.access, body)
		require.Contains(t, []int{http.StatusBadRequest, http.StatusUnprocessableEntity}, r.status, "%v: %s", body, r.body)
	}

	src := `version: 1
name: secretive
session:
  groups:
    - name: g
      requests:
        - { name: r, url: "http://127.0.0.1:9/", headers: { Authorization: "Bearer ${secret.API_TOKEN}", X-Other: "${secret.OTHER}" } }
load: { vus: 1, duration: 1s }
`
	script := b.addScript(u, src)
	p := requireProblem(t, b.do("POST", "/v1/runs", u.access, map[string]any{"script_id": script}), http.StatusUnprocessableEntity)
	requireField(t, p, "secrets.OTHER")
	// Every secret missing is named at once.
	theirs := requireProblem(t, b.do("POST", "/v1/runs", admin.access, map[string]any{"script_id": b.addScript(admin, src)}),
		http.StatusUnprocessableEntity)
	requireField(t, theirs, "secrets.API_TOKEN")
	requireField(t, theirs, "secrets.OTHER")
	require.Equal(t, http.StatusCreated, b.do("POST", "/v1/secrets", u.access, map[string]any{"name": "OTHER", "value": "oooo"}).status)

	created := b.do("POST", "/v1/runs", u.access, map[string]any{"script_id": script})
	require.Equal(t, http.StatusCreated, created.status, "body: %s", created.body)
	require.Equal(t, []any{"API_TOKEN", "OTHER"}, created.json(t)["manifest"].(map[string]any)["secrets"])
	require.NotContains(t, string(created.body), "hunter2")
	job := b.do("POST", "/v1/agent/lease", token, hello)
	require.Equal(t, http.StatusOK, job.status, "body: %s", job.body)
	require.Equal(t, map[string]any{"API_TOKEN": "hunter2", "OTHER": "oooo"}, job.json(t)["shard"].(map[string]any)["secrets"])
	require.NotContains(t, string(b.do("GET", "/v1/runs/"+created.json(t)["id"].(string), u.access, nil).body), "hunter2")
	report := "/v1/agent/shards/" + job.json(t)["shard"].(map[string]any)["shard_id"].(string) + "/report"
	require.Equal(t, http.StatusOK, b.do("POST", report, token, map[string]any{"lease": job.json(t)["shard"].(map[string]any)["lease"],
		"seconds": []any{}, "end": map[string]any{"reason": "finished"}}).status)

	// Deleted after the run was admitted: the shard fails, naming it.
	created = b.do("POST", "/v1/runs", u.access, map[string]any{"script_id": script})
	require.Equal(t, http.StatusCreated, created.status, "body: %s", created.body)
	require.Equal(t, http.StatusNoContent, b.do("DELETE", "/v1/secrets/OTHER", u.access, nil).status)
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", token, hello).status)
	shard := b.do("GET", "/v1/runs/"+created.json(t)["id"].(string), u.access, nil).json(t)["shards"].([]any)[0].(map[string]any)
	require.Equal(t, "failed", shard["state"])
	require.Contains(t, shard["reason"], "secret OTHER, which the script reads, was deleted")
}

func TestRunsAreListedBetweenTwoInstantsPageByPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, u := b.adminAndUser()
	_, token := b.registerAgent("/v1/agents", u.access, "mine", nil)
	require.Equal(t, http.StatusNoContent, b.do("POST", "/v1/agent/lease", token, hello).status)
	script := b.addScript(u, smokeScript)
	var ids []string
	var created []time.Time
	for range 4 {
		r := b.do("POST", "/v1/runs", u.access, map[string]any{"script_id": script, "duration_seconds": 1})
		require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
		run := r.json(t)
		at, err := time.Parse(time.RFC3339Nano, run["created_at"].(string))
		require.NoError(t, err)
		ids, created = append(ids, run["id"].(string)), append(created, at)
		require.Equal(t, http.StatusOK, b.do("POST", "/v1/runs/"+ids[len(ids)-1]+"/cancel", u.access, nil).status)
	}
	// listed follows the cursor from page to page of one run each, and returns the ids listed.
	listed := func(query string) []string {
		t.Helper()
		var out []string
		cursor := ""
		for {
			page := b.do("GET", "/v1/runs?limit=1&"+query+cursor, u.access, nil)
			require.Equal(t, http.StatusOK, page.status, "body: %s", page.body)
			m := page.json(t)
			for _, it := range m["items"].([]any) {
				out = append(out, it.(map[string]any)["id"].(string))
			}
			next, ok := m["next_cursor"].(string)
			if !ok {
				return out
			}
			cursor = "&cursor=" + url.QueryEscape(next)
		}
	}
	at := func(i int) string { return url.QueryEscape(created[i].Format(time.RFC3339Nano)) }
	require.Equal(t, []string{ids[3], ids[2], ids[1], ids[0]}, listed(""))
	require.Equal(t, []string{ids[3], ids[2], ids[1]}, listed("since="+at(1)), "since takes the runs created at that instant")
	require.Equal(t, []string{ids[1], ids[0]}, listed("until="+at(2)), "until leaves out the runs created at that instant")
	require.Equal(t, []string{ids[2], ids[1]}, listed("since="+at(1)+"&until="+at(3)))
	require.Equal(t, []string{ids[2], ids[1]}, listed("since="+at(1)+"&until="+at(3)+"&state=canceled"))
	require.Empty(t, listed("since="+at(1)+"&state=running"))
	require.Empty(t, listed("since="+at(2)+"&until="+at(2)))
	require.Empty(t, listed("since="+at(3)+"&test_id="+uuid.NewString()))

	// since after until is refused, naming since.
	p := requireProblem(t, b.do("GET", "/v1/runs?since="+at(3)+"&until="+at(1), u.access, nil), http.StatusBadRequest)
	requireField(t, p, "since")
	requireProblem(t, b.do("GET", "/v1/runs?since=yesterday", u.access, nil), http.StatusBadRequest)
}
