package agents_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/e2etest"
	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/report/reporttest"
	"github.com/barrage-load/barrage/internal/targettest"
)

// fleet is a server with two agents of Ada's online, a target counting what it serves, and
// scripts aimed at it.
type fleet struct {
	target      *e2etest.CountingTarget
	data, cfg   string
	p           *e2etest.Server
	token       string
	agentTokens []string
	agents      []*e2etest.Agent
	// script writes a script of one request to the target under load (YAML lines) and returns
	// its path; scriptFile writes src as a script named name.
	script     func(name, load string) string
	scriptFile func(name, src string) string
	// run reads a run by id.
	run func(id string) e2etest.RunDoc
}

func newFleet(t *testing.T, serveEnv ...string) *fleet {
	target := e2etest.NewCountingTarget(t)
	data := e2etest.ReachableDir(t)
	cfg := t.TempDir()
	p := e2etest.StartServe(t, data, nil, append([]string{"BARRAGE_METRICS_ADDR=127.0.0.1:0"}, serveEnv...)...)
	e2etest.SignUpFirstAdmin(t, p, cfg, "ada@example.com", "Ada")
	token := strings.TrimSpace(e2etest.MustCLI(t, p, cfg, "", "tokens", "create", "--name", "e2e", "--scopes", "read,write"))

	agentTokens := []string{
		strings.TrimSpace(e2etest.MustCLI(t, p, cfg, "", "agents", "create", "one")),
		strings.TrimSpace(e2etest.MustCLI(t, p, cfg, "", "agents", "create", "two")),
	}
	agents := []*e2etest.Agent{e2etest.StartAgent(t, p, agentTokens[0]), e2etest.StartAgent(t, p, agentTokens[1], "BARRAGE_AGENT_METRICS_ADDR=127.0.0.1:0")}
	e2etest.Eventually(t, 30*time.Second, "both agents online", func() bool {
		return strings.Count(e2etest.MustCLI(t, p, cfg, "", "agents", "list"), " online ") == 2
	})
	// An application-level ping goes through an agent and back.
	firstAgent := regexp.MustCompile(`(?m)^([0-9a-f-]{36})\s+one\s`).FindStringSubmatch(e2etest.MustCLI(t, p, cfg, "", "agents", "list"))
	require.NotNil(t, firstAgent)
	require.Regexp(t, `round trip [\d.]+ ms`, e2etest.MustCLI(t, p, cfg, "", "agents", "ping", firstAgent[1]))

	dir := t.TempDir()
	// scriptFile writes src as dir/NAME.yaml and returns its path.
	scriptFile := func(name, src string) string {
		path := filepath.Join(dir, name+".yaml")
		require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
		return path
	}
	script := func(name, load string) string {
		return scriptFile(name, fmt.Sprintf(`version: 1
name: %s
session:
  groups:
    - name: home
      requests:
        - { name: get home, url: "%s/" }
load:
  %s
thresholds:
  - p99 < 5s
`, name, target.Srv.URL, load))
	}
	run := func(id string) e2etest.RunDoc {
		var r e2etest.RunDoc
		require.Equal(t, http.StatusOK, e2etest.APIGet(t, p, token, "/v1/runs/"+id, &r))
		return r
	}

	return &fleet{target: target, data: data, cfg: cfg, p: p, token: token, agentTokens: agentTokens, agents: agents,
		script: script, scriptFile: scriptFile, run: run}
}

// Runs on two agents through the server: counted, metered, monitored, swept, canceled, aimed,
// judged as a local run is, and keeping a secret out of every artefact.
func TestRunsOnAgentsThroughTheServer(t *testing.T) {
	t.Parallel()
	f := newFleet(t)
	target, data, cfg, p, token, agentTokens, agents, script, scriptFile, run := f.target, f.data, f.cfg, f.p, f.token, f.agentTokens, f.agents, f.script, f.scriptFile, f.run
	_, _, _, _ = data, agentTokens, scriptFile, run

	t.Run("a run on both agents counts what the target served", func(t *testing.T) {
		before := target.Hits.Load()
		out, errOut, err := e2etest.CLI(t, p, cfg, "", "runs", "start", "--file", script("both", "vus: 6\n  duration: 3s"), "--agents", "2", "--watch")
		require.NoError(t, err, "stdout: %s\nstderr: %s", out, errOut)
		require.Contains(t, out, "generator OK")
		require.Regexp(t, `(?m)^  p99 < 5s: [0-9.]+(ms|µs|s), passed`, out, "thresholds read as barrage run prints them")
		// What the generators delivered, for the run and for each agent.
		require.Regexp(t, `(?m)^delivered: VUs spent \d+% of their time waiting on the target, \d+% in the generator$`, out)
		require.Equal(t, 2, strings.Count(out, "  delivered: VUs spent"), "each agent's: %s", out)
		// --watch follows the live stream: a line a second, merged across both agents.
		require.Regexp(t, `vus +6 +\d+ req/s .* agents 2`, errOut)
		require.Contains(t, errOut, "finished")
		id := e2etest.RunIDLine.FindStringSubmatch(out)[1]
		r := run(id)
		require.Equal(t, "finished", r.State, r.Reason)
		require.Len(t, r.Shards, 2)

		var sum struct {
			Total struct {
				Count     int64   `json:"count"`
				P50       float64 `json:"p50_ms"`
				P99       float64 `json:"p99_ms"`
				Histogram string  `json:"histogram"`
			} `json:"total"`
			Agents []struct {
				Requests int64 `json:"requests"`
			} `json:"agents"`
		}
		require.Equal(t, http.StatusOK, e2etest.APIGet(t, p, token, "/v1/runs/"+id+"/summary", &sum))
		served := target.Hits.Load() - before
		require.Positive(t, sum.Total.Count)
		// Every request the run counted reached the target; at most the ones in flight at the
		// cut (one per VU) reached it uncounted.
		require.LessOrEqual(t, sum.Total.Count, served)
		require.LessOrEqual(t, served-sum.Total.Count, int64(6))
		// Each agent's share is visible, and the shares add up.
		require.Len(t, sum.Agents, 2)
		require.Positive(t, sum.Agents[0].Requests)
		require.Positive(t, sum.Agents[1].Requests)
		require.Equal(t, sum.Total.Count, sum.Agents[0].Requests+sum.Agents[1].Requests)
		// The percentiles are those of the merged histogram the summary carries.
		enc, err := base64.StdEncoding.DecodeString(sum.Total.Histogram)
		require.NoError(t, err)
		var h metrics.Histogram
		require.NoError(t, h.UnmarshalBinary(enc))
		require.Equal(t, sum.Total.Count, h.Count())
		require.InDelta(t, float64(h.Quantile(0.99))/1e6, sum.Total.P99, 1e-9)
		require.InDelta(t, float64(h.Quantile(0.5))/1e6, sum.Total.P50, 1e-9)
	})

	t.Run("the server's own metrics are served apart from the API", func(t *testing.T) {
		m := regexp.MustCompile(`msg="serving metrics" addr=(http://\S+/metrics)`).FindStringSubmatch(p.Stderr.String())
		require.NotNil(t, m, "stderr: %s", p.Stderr.String())
		res, err := http.Get(m[1])
		require.NoError(t, err)
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode)
		text := string(body)
		require.Regexp(t, `(?m)^barrage_runs\{state="finished"\} [1-9]`, text)
		require.Regexp(t, `(?m)^barrage_agents_online [12]$`, text)
		require.Regexp(t, `(?m)^barrage_http_requests_total\{code="200",method="POST",route="/v1/agent/shards/\{id\}/report"\} [1-9]`, text)
		require.Regexp(t, `(?m)^barrage_http_request_duration_seconds_bucket\{method="GET",route="/v1/runs/\{id\}",le="\+Inf"\} [1-9]`, text)
		require.Regexp(t, `(?m)^barrage_ingest_lag_seconds_count [1-9]`, text)
		require.Regexp(t, `(?m)^barrage_db_pool_max_connections [1-9]`, text)
		require.Contains(t, text, "go_goroutines")
		// An agent's own, on its listener.
		am := regexp.MustCompile(`msg="serving metrics" addr=(http://\S+/metrics)`).FindStringSubmatch(agents[1].Stderr.String())
		require.NotNil(t, am, "agent stderr: %s", agents[1].Stderr.String())
		res, err = http.Get(am[1])
		require.NoError(t, err)
		body, err = io.ReadAll(res.Body)
		res.Body.Close()
		require.NoError(t, err)
		require.Regexp(t, `(?m)^barrage_agent_seconds_reported_total [1-9]`, string(body))
		require.Regexp(t, `(?m)^barrage_agent_shards_running 0$`, string(body))
		// The API does not serve them.
		res, err = http.Get(p.URL + "/metrics")
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusNotFound, res.StatusCode)
	})

	t.Run("the target's metrics are scraped by one agent, stored, streamed and drawn", func(t *testing.T) {
		metricsSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, "# TYPE app_requests_total counter\napp_requests_total %d\n# TYPE app_in_flight gauge\napp_in_flight 7\n", target.Hits.Load())
		}))
		t.Cleanup(metricsSrv.Close)
		path := script("watched", "vus: 4\n  duration: 3s\nmonitors:\n  - name: app\n    url: "+metricsSrv.URL+"/metrics\n"+
			"    series: [ app_requests_total, app_in_flight ]\n  - name: down\n    url: http://127.0.0.1:1/metrics\n    series: [ up ]")
		out, errOut, err := e2etest.CLI(t, p, cfg, "", "runs", "start", "--file", path, "--agents", "2", "--watch")
		require.NoError(t, err, "stdout: %s\nstderr: %s", out, errOut)
		id := e2etest.RunIDLine.FindStringSubmatch(out)[1]

		// The live stream, replayed from the start, carries the values with their units.
		_, stream := e2etest.APIRead(t, p, token, "/v1/runs/"+id+"/live")
		require.Regexp(t, `"monitors":\[\{"series":"app: app_requests_total","unit":"per second","value":[0-9.e+]+\},\{"series":"app: app_in_flight","unit":"value","value":7\},\{"series":"down: up","unit":"value"\}\]`, string(stream))

		// The report draws them on the run's axis; Chromium, with no network, draws the charts.
		dest := filepath.Join(t.TempDir(), "run.html")
		e2etest.MustCLI(t, p, cfg, "", "runs", "report", "-o", dest, id)
		page, err := os.ReadFile(dest)
		require.NoError(t, err)
		require.Contains(t, string(page), `"title":"app (per second)"`)
		require.Contains(t, string(page), `"title":"app (value)"`)
		require.Regexp(t, `Monitor down: \d+ scrapes failed; the last: .*connect`, string(page), "the agent says why a monitor has no value")
		require.Regexp(t, `"labels":\["app_in_flight"\],"values":\[\[(null,)?7,7`, string(page))
		doc := reporttest.Open(t, page)
		require.Empty(t, doc.Fetched)
		ink, charts := doc.Ink()
		require.Equal(t, 5, charts, "3 of the run (no request failed: no errors chart), 2 of the monitor")
		require.Greater(t, ink["chart-monitor-1"], 100)
	})

	t.Run("a sweep on an agent finds the knee of a target that serves 8 at a time", func(t *testing.T) {
		path := e2etest.OneRequestScript(t, "work", targettest.NewLimited(t, 8, 50*time.Millisecond).URL, "{ vus: 1, duration: 1s }")
		out, errOut, err := e2etest.CLI(t, p, cfg, "", "runs", "start", "--file", path, "--sweep", "2,8,32", "--step", "3s", "--watch")
		require.NoError(t, err, "stdout: %s\nstderr: %s", out, errOut)
		require.Contains(t, out, "knee: 8 VUs", "--watch ends with the sweep's table and knee: %s", out)
		require.NotContains(t, out, "all requests", "not an average over all the levels")
		// Each second of the sweep is printed once, in order: a level's partial last second is
		// not printed again under the next level's first.
		var secs []int
		for _, m := range regexp.MustCompile(`(?m)^ +(\d+)s  vus`).FindAllStringSubmatch(errOut, -1) {
			n, _ := strconv.Atoi(m[1])
			secs = append(secs, n)
		}
		require.Greater(t, len(secs), 6, "the live seconds: %s", errOut)
		require.True(t, slices.IsSorted(secs) && len(slices.Compact(slices.Clone(secs))) == len(secs), "each second once, in order: %v", secs)
		id := e2etest.RunIDLine.FindStringSubmatch(out)[1]
		csvPath, page := filepath.Join(t.TempDir(), "sweep.csv"), filepath.Join(t.TempDir(), "sweep.html")
		table := e2etest.MustCLI(t, p, cfg, "", "runs", "sweep", "--csv", csvPath, "--report", page, id)
		require.Contains(t, table, "knee: 8 VUs", "the table: %s", table)
		csv, err := os.ReadFile(csvPath)
		require.NoError(t, err)
		require.Regexp(t, `(?m)^8,[^\n]*,true,$`, string(csv))
		html, err := os.ReadFile(page)
		require.NoError(t, err)
		doc := reporttest.Open(t, html)
		require.Empty(t, doc.Fetched)
		_, charts := doc.Ink()
		require.Equal(t, 2, charts)
	})

	t.Run("cancel stops the load at the target", func(t *testing.T) {
		out := e2etest.MustCLI(t, p, cfg, "", "runs", "start", "--file", script("long", "vus: 4\n  duration: 2m"), "--agents", "2")
		id := e2etest.RunIDLine.FindStringSubmatch(out)[1]
		from := target.Hits.Load()
		e2etest.Eventually(t, 30*time.Second, "traffic at the target", func() bool { return target.Hits.Load() > from+100 })
		canceledAt := time.Now()
		e2etest.MustCLI(t, p, cfg, "", "runs", "cancel", id)
		e2etest.Eventually(t, 30*time.Second, "the run to end canceled", func() bool { return run(id).State == "canceled" })
		ended := target.Hits.Load()
		t.Logf("the run ended canceled %s after the cancel", time.Since(canceledAt).Round(time.Millisecond))
		for _, sh := range run(id).Shards {
			require.Equal(t, "canceled", sh.State, sh.Reason)
		}
		// Once every shard has ended, nothing more reaches the target.
		require.Equal(t, ended, target.Hits.Load())
	})

	t.Run("a run is aimed with -e, and a run that lacks a value is refused naming it", func(t *testing.T) {
		path := scriptFile("aimed", `version: 1
name: aimed
variables:
  env:
    target: TARGET_URL
    path: { from: TARGET_PATH, default: /default }
session:
  groups:
    - name: g
      requests:
        - { name: r, url: "${target}${path}" }
load: { vus: 1, iterations: 3, duration: 30s }
`)
		out, errOut, err := e2etest.CLI(t, p, cfg, "", "runs", "start", "--file", path)
		require.Error(t, err)
		require.Contains(t, errOut, "env.TARGET_URL: the script reads target from it, which has no default", "stdout: %s", out)
		_, errOut, err = e2etest.CLI(t, p, cfg, "", "runs", "start", "--file", path, "-e", "TARGET_URL="+target.Srv.URL, "-e", "NOPE=1")
		require.Error(t, err)
		require.Contains(t, errOut, "env.NOPE: the script reads no environment variable of this name; it reads TARGET_URL, TARGET_PATH")

		before := target.Hits.Load()
		out = e2etest.MustCLI(t, p, cfg, "", "runs", "start", "--file", path, "-e", "TARGET_URL="+target.Srv.URL, "-e", "TARGET_PATH=/aimed", "--watch")
		id := e2etest.RunIDLine.FindStringSubmatch(out)[1]
		require.Equal(t, "finished", run(id).State)
		require.EqualValues(t, 3, target.Hits.Load()-before, "the agent read the run's env, not its own")
		require.Contains(t, e2etest.MustCLI(t, p, cfg, "", "runs", "show", id), "env TARGET_PATH=/aimed TARGET_URL="+target.Srv.URL)
	})

	t.Run("the same load reads the same verdict locally and on an agent", func(t *testing.T) {
		// The open model with a think time and a second request, on one agent and on this
		// machine: the same arrivals due, started and dropped (iterations, not wake-ups), the
		// same requests and checks, and neither reads the target as the limit.
		path := scriptFile("verdict", `version: 1
name: verdict
session:
  groups:
    - name: g
      requests:
        - { name: first, url: "`+target.Srv.URL+`/a", think: { fixed: 100ms } }
        - { name: second, url: "`+target.Srv.URL+`/b", assert: [ { status: 200 } ] }
load: { rate: 20/s, duration: 3s, max_vus: 10 }
`)
		type verdictDoc struct {
			Total struct {
				Count int64 `json:"count"`
			} `json:"total"`
			Checks  []struct{ Passes, Fails int64 }
			Verdict struct {
				GeneratorLimited bool `json:"generator_limited"`
				TargetLimited    bool `json:"target_limited"`
				Delivery         struct {
					Model     string `json:"model"`
					Scheduled int64  `json:"scheduled"`
					Dropped   int64  `json:"dropped"`
				} `json:"delivery"`
			} `json:"verdict"`
		}
		localOut := filepath.Join(t.TempDir(), "local.json")
		_, errOut, code := e2etest.RunWithEnv(t, nil, "run", "--quiet", "--out", localOut, path)
		require.Zero(t, code, errOut)
		var local, agent verdictDoc
		b, err := os.ReadFile(localOut)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &local))

		out := e2etest.MustCLI(t, p, cfg, "", "runs", "start", "--file", path, "--watch")
		id := e2etest.RunIDLine.FindStringSubmatch(out)[1]
		require.Equal(t, "finished", run(id).State)
		require.Equal(t, http.StatusOK, e2etest.APIGet(t, p, token, "/v1/runs/"+id+"/summary", &agent))

		require.Equal(t, "open", local.Verdict.Delivery.Model)
		require.Equal(t, int64(60), local.Verdict.Delivery.Scheduled, "20/s for 3 s: 60 iterations due, not their think times' wake-ups")
		// What was due, started and dropped is the load's, wherever it ran; whether a generator ran
		// short of CPU is the machine's at that moment (this one runs other tests beside), and is
		// not compared.
		require.Equal(t, local.Verdict.Delivery, agent.Verdict.Delivery)
		require.False(t, local.Verdict.TargetLimited || agent.Verdict.TargetLimited, "a fast target at 20/s limits nothing: local %+v, agent %+v", local.Verdict, agent.Verdict)
		require.Equal(t, int64(120), local.Total.Count)
		require.Equal(t, local.Total.Count, agent.Total.Count)
		require.Equal(t, local.Checks, agent.Checks, "the checks tallied alike")
	})

	t.Run("a secret sent in a header and a body is in no artefact of its run", func(t *testing.T) {
		const value = "s3cr3t+Vm9s/dGFp"
		var sent atomic.Int64
		echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if r.Header.Get("Authorization") == "Bearer "+value && strings.Contains(string(body), value) {
				sent.Add(1)
			}
			w.Header().Set("X-Echo", r.Header.Get("Authorization"))
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"got": %q, "body": %q}`, r.Header.Get("Authorization"), body)
		}))
		t.Cleanup(echo.Close)
		path := filepath.Join(t.TempDir(), "secretive.yaml")
		require.NoError(t, os.WriteFile(path, []byte(`version: 1
name: secretive
session:
  groups:
    - name: g
      requests:
        - name: login
          method: POST
          url: "`+echo.URL+`/login"
          headers: { Authorization: "Bearer ${secret.API_TOKEN}" }
          body: { json: { password: "${secret.API_TOKEN}" } }
          assert:
            - { json: "$.got", equals: nope }
            - body_contains: "${secret.API_TOKEN}-not-there"
load: { vus: 1, iterations: 3, duration: 30s }
`), 0o644))
		// Refused, naming it, until the user has the secret; set from stdin, never an argument.
		_, errOut, err := e2etest.CLI(t, p, cfg, "", "runs", "start", "--file", path)
		require.Error(t, err)
		require.Contains(t, errOut, "secrets.API_TOKEN: the project has no secret of this name")
		_, errOut, err = e2etest.CLI(t, p, cfg, value+"\n", "secrets", "set", "API_TOKEN")
		require.NoError(t, err, errOut)
		require.Contains(t, e2etest.MustCLI(t, p, cfg, "", "secrets", "list"), "API_TOKEN")

		var printed strings.Builder
		out, errOut, _ := e2etest.CLI(t, p, cfg, "", "runs", "start", "--file", path, "--watch")
		printed.WriteString(out + errOut)
		id := e2etest.RunIDLine.FindStringSubmatch(out)[1]
		require.Equal(t, "finished", run(id).State)
		require.EqualValues(t, 3, sent.Load(), "the target got the secret in the header and the body")
		require.Contains(t, out, "***", "the failed checks name what they read, masked: %s", out)
		// The agents tallied each check; the server's summary and --watch say so.
		type tally struct {
			Request, Name string
			Passes, Fails int64
		}
		var sum struct{ Checks []tally }
		e2etest.APIGet(t, p, token, "/v1/runs/"+id+"/summary", &sum)
		require.Equal(t, []tally{{"login", `json $.got equals "nope"`, 0, 3}, {"login", "body_contains ${secret.API_TOKEN}-not-there", 0, 3}}, sum.Checks)
		require.Contains(t, out, "checks: 0 of 2 held on every response\n  ✗ login: json $.got equals \"nope\"  0.00% (0 of 3), 3 failed")
		for _, args := range [][]string{{"runs", "show", id}, {"runs", "results", id}, {"runs", "list"}} {
			o, e, _ := e2etest.CLI(t, p, cfg, "", args...)
			printed.WriteString(o + e)
		}
		testID := strings.TrimSpace(e2etest.MustCLI(t, p, cfg, "", "tests", "push", path))
		o, e, _ := e2etest.CLI(t, p, cfg, "", "tests", "debug", testID)
		require.Contains(t, o, "Authorization: Bearer ***", "the debug's trace shows the header sent, masked: %s%s", o, e)
		printed.WriteString(o + e)
		for _, route := range []string{"", "/summary", "/summary.csv", "/series", "/series.csv", "/report", "/live"} {
			status, body := e2etest.APIRead(t, p, token, "/v1/runs/"+id+route)
			require.Equal(t, http.StatusOK, status, "%s: %s", route, body)
			printed.Write(body)
		}
		forms := []string{value, url.QueryEscape(value), url.PathEscape(value), base64.StdEncoding.EncodeToString([]byte(value))}
		logs := printed.String() + p.Stdout.String() + p.Stderr.String() + agents[0].Stderr.String() + agents[1].Stderr.String()
		for _, f := range forms {
			require.NotContains(t, logs, f, "no answer, output or log shows it")
		}
		// Nor does anything the server stored: its database and its files, byte for byte.
		err = filepath.WalkDir(data, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !d.Type().IsRegular() {
				return nil // a file PostgreSQL removed meanwhile, a socket
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return nil
			}
			for _, f := range forms {
				require.False(t, bytes.Contains(b, []byte(f)), "%s holds the secret", path)
			}
			return nil
		})
		require.NoError(t, err)
	})
}

// Agents that go wrong mid-run, each on a server and agents of its own test: killed, stopped
// with SIGTERM, or left by their server.
func TestAgentsThatStopMidRun(t *testing.T) {
	t.Parallel()
	f := newFleet(t)
	target, data, cfg, p, token, agentTokens, agents, script, scriptFile, run := f.target, f.data, f.cfg, f.p, f.token, f.agentTokens, f.agents, f.script, f.scriptFile, f.run
	_, _, _, _ = data, agentTokens, scriptFile, run

	// bothRunning starts a run of 4 VUs for 20s on both agents and waits until both have
	// results stored, returning its id.
	bothRunning := func(t *testing.T, name string, watch bool) (id string, watched chan string) {
		t.Helper()
		args := []string{"runs", "start", "--file", script(name, "vus: 4\n  duration: 20s"), "--agents", "2"}
		if !watch {
			out := e2etest.MustCLI(t, p, cfg, "", args...)
			id = e2etest.RunIDLine.FindStringSubmatch(out)[1]
		} else {
			// --watch follows the run from its start, in the background, as a person would.
			watched = make(chan string, 1)
			go func() {
				out, errOut, _ := e2etest.CLI(t, p, cfg, "", append(args, "--watch")...)
				watched <- out + "\n--- stderr\n" + errOut
			}()
			e2etest.Eventually(t, 30*time.Second, "the run created", func() bool {
				var list struct{ Items []e2etest.RunDoc }
				e2etest.APIGet(t, p, token, "/v1/runs", &list)
				for _, r := range list.Items {
					if r.State != "finished" && r.State != "failed" && r.State != "canceled" {
						id = r.ID
						return true
					}
				}
				return false
			})
		}
		e2etest.Eventually(t, 30*time.Second, "both shards running", func() bool {
			r := run(id)
			return r.State == "running" && r.Shards[0].State == "running" && r.Shards[1].State == "running"
		})
		// A second is in the series once every shard has reported it: both agents have results
		// stored before one is stopped.
		e2etest.Eventually(t, 30*time.Second, "a second from both agents", func() bool {
			var series struct{ Seconds []any }
			return e2etest.APIGet(t, p, token, "/v1/runs/"+id+"/series", &series) == http.StatusOK && len(series.Seconds) > 0
		})
		return id, watched
	}
	type gapDoc struct {
		Agent           string  `json:"agent"`
		State           string  `json:"state"`
		FromS           int64   `json:"from_s"`
		RPS             float64 `json:"rps"`
		UnreportedS     float64 `json:"unreported_s"`
		MissingRequests int64   `json:"missing_requests"`
	}
	type summaryDoc struct {
		State string `json:"state"`
		Total struct {
			Count int64 `json:"count"`
		} `json:"total"`
		Incomplete *struct {
			MissingRequests int64    `json:"missing_requests"`
			Agents          []gapDoc `json:"agents"`
		} `json:"incomplete"`
		Agents []struct {
			State    string `json:"state"`
			Requests int64  `json:"requests"`
		} `json:"agents"`
	}

	t.Run("an agent killed mid-run is seen at once, and the result says what is missing", func(t *testing.T) {
		before := target.Hits.Load()
		id, watched := bothRunning(t, "lost", true)
		require.NoError(t, agents[0].Cmd.Process.Signal(syscall.SIGKILL))
		<-agents[0].Done
		killed := time.Now()
		e2etest.Eventually(t, 30*time.Second, "the killed agent's shard lost", func() bool {
			for _, sh := range run(id).Shards {
				if sh.State == "lost" {
					return true
				}
			}
			return false
		})
		t.Logf("the shard was lost %s after the kill", time.Since(killed).Round(time.Millisecond))
		e2etest.Eventually(t, time.Minute, "the run to end", func() bool { return run(id).State == "failed" })
		require.Contains(t, run(id).Reason, "was lost")

		// --watch said so when it happened, while the other agent's seconds went on.
		var out string
		select {
		case out = <-watched:
		case <-time.After(time.Minute):
			t.Fatal("--watch did not end with the run")
		}
		lostLine := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d  agent [0-9a-f-]{36} \(\d:\d/2\): LOST: the agent sent nothing for 8s`).FindStringIndex(out)
		require.NotNil(t, lostLine, out)
		later := regexp.MustCompile(`(?m)^ +1[89]s  vus`).FindStringIndex(out)
		require.NotNil(t, later, "the surviving agent's last seconds: %s", out)
		require.Less(t, lostLine[0], later[0], "the loss is printed as it happens, not at the end: %s", out)
		// The results lead with the run's state and say plainly what is missing.
		res := out[strings.Index(out, "\nrun "):]
		require.Regexp(t, `^\nrun [0-9a-f-]{36}: failed \(agent [0-9a-f-]{36} was lost`, res)
		require.Regexp(t, `(?m)^INCOMPLETE: the figures stop short for 1 agent\(s\); up to \d+ requests the target served may not be counted\n  - agent one \([0-9a-f-]{36}\) lost from second \d+`, res)
		require.Less(t, strings.Index(res, "INCOMPLETE"), strings.Index(res, "all requests"), "before the figures")
		require.Contains(t, res, "(judged on incomplete figures: see INCOMPLETE above)")

		var sum summaryDoc
		require.Equal(t, http.StatusOK, e2etest.APIGet(t, p, token, "/v1/runs/"+id+"/summary", &sum))
		require.Equal(t, "failed", sum.State)
		require.NotNil(t, sum.Incomplete)
		require.Len(t, sum.Incomplete.Agents, 1)
		gap := sum.Incomplete.Agents[0]
		require.Equal(t, "lost", gap.State)
		require.Positive(t, gap.RPS)
		require.Positive(t, gap.UnreportedS)
		// What the target served and the summary did not count is within the estimate.
		served := target.Hits.Load() - before
		missing := served - sum.Total.Count
		t.Logf("served %d, counted %d: %d missing, %d estimated (%.1f/s × %.2fs + in flight)",
			served, sum.Total.Count, missing, gap.MissingRequests, gap.RPS, gap.UnreportedS)
		require.GreaterOrEqual(t, missing, int64(0))
		require.LessOrEqual(t, missing, sum.Incomplete.MissingRequests)
		lost := 0
		for _, a := range sum.Agents {
			require.Positive(t, a.Requests, "partial results are kept")
			if a.State == "lost" {
				lost++
			}
		}
		require.Equal(t, 1, lost)

		// The report leads with the run's state, then what is missing, before any verdict.
		dest := filepath.Join(t.TempDir(), "lost.html")
		e2etest.MustCLI(t, p, cfg, "", "runs", "report", "-o", dest, id)
		page, err := os.ReadFile(dest)
		require.NoError(t, err)
		html := string(page)
		state, incomplete := strings.Index(html, `id="run-state"`), strings.Index(html, `id="incomplete"`)
		require.Positive(t, state, "the state box")
		require.Greater(t, incomplete, state)
		require.Less(t, incomplete, strings.Index(html, `class="verdict"`), "before the verdicts")
		require.Contains(t, html, "on incomplete figures")
	})

	t.Run("an agent stopped with SIGTERM mid-run reports every request it sent", func(t *testing.T) {
		agents[0] = e2etest.StartAgent(t, p, agentTokens[0])
		e2etest.Eventually(t, 30*time.Second, "both agents online", func() bool {
			return strings.Count(e2etest.MustCLI(t, p, cfg, "", "agents", "list"), " online ") == 2
		})
		before := target.Hits.Load()
		id, _ := bothRunning(t, "terminated", false)
		require.NoError(t, agents[0].Cmd.Process.Signal(syscall.SIGTERM))
		require.NoError(t, <-agents[0].Done, "the agent exits 0 on SIGTERM: %s", agents[0].Stderr.String())
		e2etest.Eventually(t, time.Minute, "the run to end", func() bool { return run(id).State == "failed" })
		require.Contains(t, run(id).Reason, "the agent was stopped")
		var sum summaryDoc
		require.Equal(t, http.StatusOK, e2etest.APIGet(t, p, token, "/v1/runs/"+id+"/summary", &sum))
		require.Equal(t, target.Hits.Load()-before, sum.Total.Count, "every request the target served is counted")
		require.NotNil(t, sum.Incomplete)
		require.Len(t, sum.Incomplete.Agents, 1)
		require.Equal(t, "failed", sum.Incomplete.Agents[0].State)
		require.Zero(t, sum.Incomplete.MissingRequests)
	})

	t.Run("agents stop their load when the server is gone", func(t *testing.T) {
		out := e2etest.MustCLI(t, p, cfg, "", "runs", "start", "--file", script("orphan", "vus: 2\n  duration: 2m"))
		id := e2etest.RunIDLine.FindStringSubmatch(out)[1]
		e2etest.Eventually(t, 30*time.Second, "the run running", func() bool { return run(id).State == "running" })
		from := target.Hits.Load()
		e2etest.Eventually(t, 30*time.Second, "traffic at the target", func() bool { return target.Hits.Load() > from+50 })
		p.Stop(t)
		stopped := time.Now()
		// The agent gives the server LostAfter (10s), then stops its load: the shard ends, every
		// request it sent answered, and the target hears nothing more from it.
		agents[1].Stderr.Await(t, regexp.MustCompile(`(?s)lost the server.*shard ended`), 45*time.Second, "the agent", agents[1].Done)
		t.Logf("the load stopped %s after the server", time.Since(stopped).Round(time.Millisecond))
		quiet := target.Hits.Load()
		require.NoError(t, agents[1].Cmd.Process.Kill())
		<-agents[1].Done
		require.Equal(t, quiet, target.Hits.Load(), "no request after the shard's end")
	})
}
