package faults_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/e2etest"
	"github.com/barrage-load/barrage/internal/pgembed"
)

// freePort is a port on 127.0.0.1 that nothing listened on a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestTheDatabaseRestartsUnderARun: serve on a PostgreSQL of its own, a private agent, a run
// under way. PostgreSQL stops: the API answers 503 with Retry-After, never 500, and the agent's
// reports fail. It comes back: the API answers again soon enough that the agent rides the outage
// out (10 seconds without the server), the run goes on, and no second of its metrics is lost:
// the summary counts every request the target served.
func TestTheDatabaseRestartsUnderARun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pgCfg := pgembed.Config{DataDir: e2etest.ReachableDir(t), Port: freePort(t), Database: "barrage", Fast: true}
	pg, err := pgembed.Start(ctx, pgCfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = pg.Stop(context.Background()) })

	target := e2etest.NewCountingTarget(t)
	p := e2etest.StartServe(t, e2etest.ReachableDir(t), nil, "DATABASE_URL="+pg.DSN())
	cfg := t.TempDir()
	e2etest.SignUpFirstAdmin(t, p, cfg, "ada@example.com", "Ada")
	token := strings.TrimSpace(e2etest.MustCLI(t, p, cfg, "", "tokens", "create", "--name", "faults", "--scopes", "read,write"))
	agent := e2etest.StartAgent(t, p, strings.TrimSpace(e2etest.MustCLI(t, p, cfg, "", "agents", "create", "one")))
	e2etest.Eventually(t, 30*time.Second, "the agent online", func() bool {
		return strings.Contains(e2etest.MustCLI(t, p, cfg, "", "agents", "list"), " online ")
	})
	file := filepath.Join(t.TempDir(), "steady.yaml")
	require.NoError(t, os.WriteFile(file, []byte(fmt.Sprintf(`version: 1
name: steady
session:
  groups:
    - name: home
      requests:
        - { name: home, url: "%s/" }
load:
  vus: 2
  duration: 15s
`, target.Srv.URL)), 0o644))
	id := e2etest.RunIDLine.FindStringSubmatch(e2etest.MustCLI(t, p, cfg, "", "runs", "start", "--file", file))[1]
	status := func() (int, http.Header) {
		req, err := http.NewRequest("GET", p.URL+"/v1/runs/"+id, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode, res.Header
	}
	e2etest.Eventually(t, 30*time.Second, "the run under way", func() bool {
		var r e2etest.RunDoc
		return e2etest.APIGet(t, p, token, "/v1/runs/"+id, &r) == http.StatusOK && r.State == "running" && target.Hits.Load() > 20
	})

	failedReports := func() int { return strings.Count(agent.Stderr.String(), "report failed") }
	failedBefore := failedReports()
	require.NoError(t, pg.Stop(ctx))
	down := time.Now()
	// Away until the API has answered without it and the agent's report has failed (well within
	// what agents ride out: 10 s without the server), and asked all along: 503 with Retry-After,
	// never 500.
	var answers []int
	ask := func() int {
		code, h := status()
		answers = append(answers, code)
		require.NotEqual(t, http.StatusInternalServerError, code, "never a 500\nserve's errors:\n%s", errorLines(p.Stderr.String()))
		if code == http.StatusServiceUnavailable {
			require.NotEmpty(t, h.Get("Retry-After"))
		}
		return code
	}
	e2etest.Eventually(t, 30*time.Second, "a 503 and a failed report while the database is away", func() bool {
		return ask() == http.StatusServiceUnavailable && failedReports() > failedBefore
	})
	pg, err = pgembed.Start(ctx, pgCfg)
	require.NoError(t, err)
	back := time.Now()
	// The run's end below tells whether the API came back in time: an agent that went 10 s
	// without it would have stopped the load, and the run would have failed.
	e2etest.Eventually(t, time.Minute, "the API back", func() bool { return ask() == http.StatusOK })
	recovered := time.Since(back)
	counts := map[int]int{}
	for _, c := range answers {
		counts[c]++
	}
	t.Logf("database away %s; the API answered again %s after it was back; answers by status: %v", back.Sub(down).Round(time.Millisecond),
		recovered.Round(time.Millisecond), counts)

	e2etest.Eventually(t, 60*time.Second, "the run's end", func() bool {
		var r e2etest.RunDoc
		return e2etest.APIGet(t, p, token, "/v1/runs/"+id, &r) == http.StatusOK && r.State != "running" && r.State != "queued" && r.State != "starting"
	})
	var r e2etest.RunDoc
	require.Equal(t, http.StatusOK, e2etest.APIGet(t, p, token, "/v1/runs/"+id, &r))
	require.Equal(t, "finished", r.State, r.Reason)
	var sum struct {
		Total struct {
			Count int64 `json:"count"`
		} `json:"total"`
	}
	e2etest.Eventually(t, 30*time.Second, "the summary", func() bool {
		return e2etest.APIGet(t, p, token, "/v1/runs/"+id+"/summary", &sum) == http.StatusOK
	})
	require.Equal(t, target.Hits.Load(), sum.Total.Count, "every request the target served is counted: no second was lost")
}

// errorLines are the lines of a log at level ERROR.
func errorLines(log string) string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "level=ERROR") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestSIGTERMFinishesTheRequestsItAccepted: requests in flight when serve is told to stop (long
// polls of agents waiting for work, reads) end with their answer, not a 5xx; requests after it
// are refused at the door (a connection error), never accepted and dropped.
func TestSIGTERMFinishesTheRequestsItAccepted(t *testing.T) {
	t.Parallel()
	p := e2etest.StartServe(t, e2etest.ReachableDir(t), nil)
	cfg := t.TempDir()
	e2etest.SignUpFirstAdmin(t, p, cfg, "ada@example.com", "Ada")
	token := strings.TrimSpace(e2etest.MustCLI(t, p, cfg, "", "tokens", "create", "--name", "faults", "--scopes", "read,write"))
	agentToken := strings.TrimSpace(e2etest.MustCLI(t, p, cfg, "", "agents", "create", "waiting"))

	type outcome struct {
		what   string
		status int
		err    error
	}
	var mu sync.Mutex
	var outcomes []outcome
	var wg sync.WaitGroup
	send := func(what, method, path, bearer, body string) outcome {
		defer wg.Done()
		req, err := http.NewRequest(method, p.URL+path, strings.NewReader(body))
		if err != nil {
			t.Error(err)
			return outcome{err: err}
		}
		req.Header.Set("Authorization", "Bearer "+bearer)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		o := outcome{what: what, err: err}
		if err == nil {
			o.status = res.StatusCode
			res.Body.Close()
		}
		mu.Lock()
		outcomes = append(outcomes, o)
		mu.Unlock()
		return o
	}
	// Long polls: each waits up to 5 s for work that never comes.
	lease := `{"protocol": 7, "version": "test", "cores": 1, "wait_seconds": 5}`
	for range 8 {
		wg.Add(1)
		go func() { send("lease", "POST", "/v1/agent/lease", agentToken, lease) }()
	}
	e2etest.Eventually(t, 10*time.Second, "the long polls under way", func() bool {
		return strings.Contains(e2etest.MustCLI(t, p, cfg, "", "agents", "list"), " online ")
	})
	// Reads in a loop from several clients, each until the door closes: some are in flight
	// when the signal comes.
	var first sync.WaitGroup
	for range 8 {
		wg.Add(1)
		first.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				wg.Add(1)
				last := send("read", "GET", "/v1/runs", token, "")
				if i == 0 {
					first.Done()
				}
				if last.err != nil || i > 2000 {
					return
				}
			}
		}()
	}
	first.Wait()
	require.NoError(t, p.Cmd.Process.Signal(syscall.SIGTERM))
	wg.Wait()
	select {
	case err := <-p.Done:
		require.NoError(t, err, "serve exits 0 on SIGTERM\nstderr:\n%s", p.Stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not stop\nstderr:\n%s", p.Stderr.String())
	}
	// A request the server took is in its log, once; its client must have had the answer. The
	// others never reached a handler: their clients saw the door close (reset, refused, or a
	// connection closed before any request was read), which a client may retry.
	answered, refused := 0, 0
	for _, o := range outcomes {
		switch {
		case o.err != nil:
			refused++
		case o.what == "read":
			require.Less(t, o.status, 500, "an accepted request is answered, not failed")
			answered++
		default:
			require.Less(t, o.status, 500, "%s: an accepted request is answered, not failed", o.what)
		}
	}
	handled := strings.Count(p.Stderr.String(), "msg=request method=GET path=/v1/runs ")
	require.Equal(t, handled, answered, "every read the server handled was answered to its client\nstderr:\n%s", p.Stderr.String())
	t.Logf("answered %d, refused at the door %d", answered, refused)
}

// The embedded PostgreSQL killed under serve: serve stops, non-zero, saying what happened and
// what to do (start it again with the same --data-dir, or run it under a supervisor).
func TestServeStopsSayingWhatToDoWhenItsEmbeddedPostgreSQLDies(t *testing.T) {
	t.Parallel()
	p := e2etest.StartServe(t, e2etest.ReachableDir(t), nil)
	// serve's child named postgres (any of serve's threads may have started it).
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	require.NoError(t, err)
	var pg int
	for _, path := range stats {
		stat, err := os.ReadFile(path)
		if err != nil {
			continue // gone meanwhile
		}
		var pid, ppid int
		var comm, state string
		if _, err := fmt.Sscan(string(stat), &pid, &comm, &state, &ppid); err == nil && ppid == p.Cmd.Process.Pid && comm == "(postgres)" {
			pg = pid
		}
	}
	require.NotZero(t, pg, "serve runs its PostgreSQL as a child")
	require.NoError(t, syscall.Kill(pg, syscall.SIGKILL))
	select {
	case err := <-p.Done:
		require.Error(t, err, "serve exits non-zero")
	case <-time.After(time.Minute):
		t.Fatal("serve went on without its database")
	}
	require.Contains(t, p.Stderr.String(), "the embedded PostgreSQL exited")
	require.Contains(t, p.Stderr.String(), "start it again with the same --data-dir")
}
