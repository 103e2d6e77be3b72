// Command ingest measures how the server takes agents' metrics: it registers simulated agents on
// a running `barrage serve`, runs one script on all of them, and has each send a snapshot of
// many labels every second, as a real agent does, while it follows the run's live stream. It
// prints the CPU the server and its PostgreSQL used (from /proc, for the pids given), and the
// delay from each second's end at the agents to its event on the live stream:
//
//	ingest cpu cores = 0.21
//	live delay p99 ms = 412
//
// scripts/bench-runs.sh runs it; it needs a server whose user has no limits (the first admin).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/metrics"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ingest:", err)
		os.Exit(1)
	}
}

type client struct {
	server, bearer string
	hc             *http.Client
}

func (c client) do(ctx context.Context, method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.server+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.bearer)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, err
	}
	if res.StatusCode >= 300 && res.StatusCode != http.StatusNoContent {
		return res.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, data)
	}
	if out != nil && len(data) > 0 {
		return res.StatusCode, json.Unmarshal(data, out)
	}
	return res.StatusCode, nil
}

func run() error {
	server := flag.String("server", "", "the server's URL")
	token := flag.String("token", "", "a personal API token of a user without limits")
	agents := flag.Int("agents", 50, "simulated agents")
	perRun := flag.Int("per-run", 100, "agents in each run: the agents are split into runs of this many")
	labels := flag.Int("labels", 20, "request labels in each snapshot")
	seconds := flag.Int("seconds", 60, "seconds of metrics each agent sends")
	pids := flag.String("pids", "", "comma-separated pids whose CPU to measure (the server and its PostgreSQL)")
	pgdata := flag.String("pgdata", "", "the PostgreSQL data folder, to measure what the database grew by")
	flag.Parse()
	if *server == "" || *token == "" {
		return errors.New("want --server and --token")
	}
	if *agents < 1 || *perRun < 1 || *seconds < 1 || *labels < 1 {
		return errors.New("--agents, --per-run, --seconds and --labels must be at least 1")
	}
	ctx := context.Background()
	user := client{server: *server, bearer: *token, hc: &http.Client{Timeout: time.Minute}}

	// The agents, each with its own connection, as real agents have.
	sims := make([]*agent, *agents)
	if err := each(len(sims), func(i int) error {
		var a struct{ ID, Token string }
		// Shared agents (an admin's): a user keeps at most 50 of their own.
		if _, err := user.do(ctx, "POST", "/v1/admin/agents", map[string]any{"name": fmt.Sprintf("sim-%04d", i)}, &a); err != nil {
			return err
		}
		sims[i] = &agent{id: a.ID, c: client{*server, a.Token, &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}}}
		return nil
	}); err != nil {
		return err
	}

	// Every agent asks for work as real agents do, a long poll after another, until it is given
	// its shard; then it reports each second. Measured first: what the polls of idle agents cost.
	leased := make(chan *agent)
	var polling sync.WaitGroup
	polling.Add(len(sims))
	for _, a := range sims {
		go a.poll(ctx, leased, polling.Done)
	}
	polling.Wait()
	idle, err := measure(*pids, 10*time.Second)
	if err != nil {
		return err
	}
	fmt.Printf("lease long-poll cpu cores (%d idle agents) = %.3f\n", len(sims), idle)

	grewFrom, err := dirSize(*pgdata)
	if err != nil {
		return err
	}
	// One script of many requests, run on each group of per-run agents, whose agents report
	// from the moment they have their shards, and whose live stream is followed: when did each
	// second arrive?
	liveCtx, stopLive := context.WithCancel(ctx)
	defer stopLive()
	var runs []*simRun
	var wg sync.WaitGroup
	var refused, sent atomic.Int64
	for from := 0; from < len(sims); from += *perRun {
		r, err := startRun(ctx, user, sims[from:min(from+*perRun, len(sims))], *labels, *seconds, leased)
		if err != nil {
			return err
		}
		runs = append(runs, r)
		if len(runs) <= maxStreams {
			go follow(liveCtx, user, r.id, r.arrive)
		}
		for _, a := range r.agents {
			wg.Add(1)
			go func() {
				defer wg.Done()
				refused.Add(a.report(ctx, r, *seconds, &sent))
			}()
		}
	}
	// The CPU is measured while every agent reports: from the last run's first second to the
	// first run's last.
	first, last := runs[0].start, runs[len(runs)-1].start
	window := first.Add(time.Duration(*seconds) * time.Second).Sub(last.Add(time.Second))
	if window < 10*time.Second {
		return fmt.Errorf("the runs took %s to start: only %s with every agent reporting; send more --seconds", last.Sub(first).Round(time.Second), window.Round(time.Second))
	}
	fmt.Fprintf(os.Stderr, "ingest: %d agents in %d runs report; measuring for %s\n", len(sims), len(runs), window.Round(time.Second))
	time.Sleep(time.Until(last.Add(time.Second)))
	cores, err := measure(*pids, window)
	if err != nil {
		return err
	}
	wg.Wait()
	grewTo, err := dirSize(*pgdata)
	if err != nil {
		return err
	}

	// Let the streams deliver the last seconds and the runs end.
	deadline := time.Now().Add(30 * time.Second)
	for _, r := range runs {
		for !r.ended.Load() && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
	}
	stopLive()
	var delays, lastDelays []float64
	worst, worstAt := 0.0, ""
	short := 0
	for n, r := range runs {
		r.mu.Lock()
		for idx, at := range r.arrived {
			d := float64(at.Sub(r.start.Add(time.Duration(idx+1)*time.Second))) / float64(time.Millisecond)
			delays = append(delays, d)
			if idx == int64(*seconds)-1 {
				lastDelays = append(lastDelays, d)
			}
			if d > worst {
				worst, worstAt = d, fmt.Sprintf("run %d second %d", n, idx)
			}
		}
		if n < maxStreams {
			short += *seconds - len(r.arrived)
		}
		r.mu.Unlock()
	}
	if len(delays) == 0 {
		return errors.New("the live streams gave no second")
	}
	slices.Sort(delays)
	pct := func(q float64) float64 { return delays[min(len(delays)-1, int(float64(len(delays))*q))] }
	var took []time.Duration
	for _, r := range runs {
		took = append(took, r.reports...)
	}
	slices.Sort(took)
	tookAt := func(q float64) float64 {
		return float64(took[min(len(took)-1, int(float64(len(took))*q))]) / float64(time.Millisecond)
	}
	fmt.Printf("agents %d in %d runs, labels %d, seconds %d, reports %d/s\n", len(sims), len(runs), *labels, *seconds, len(sims))
	fmt.Printf("live delay worst: %s, %.0f ms\n", worstAt, worst)
	fmt.Printf("live delay of the runs' last seconds ms = %.0f\n", lastDelays)
	fmt.Printf("reports refused = %d\n", refused.Load())
	fmt.Printf("report p50 ms = %.0f, p99 ms = %.0f\n", tookAt(0.5), tookAt(0.99))
	if *pgdata != "" {
		hours := float64(len(sims)) * float64(*seconds) / 3600
		fmt.Printf("database growth per agent-hour MB = %.1f\n", float64(grewTo-grewFrom)/hours/1e6)
	}
	fmt.Printf("live delay p50 ms = %.0f\n", pct(0.5))
	fmt.Printf("live delay p99 ms = %.0f\n", pct(0.99))
	fmt.Printf("ingest cpu cores = %.3f\n", cores)

	// Every snapshot sent must be in its run's summary, and every second on its live stream.
	var lost int64
	for _, r := range runs {
		var sum struct {
			Total struct{ Count int64 } `json:"total"`
		}
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
			status, err := user.do(ctx, "GET", "/v1/runs/"+r.id+"/summary", nil, &sum)
			if err == nil {
				break
			}
			if status != http.StatusConflict || time.Now().After(deadline) {
				return fmt.Errorf("run %s has no summary: %w", r.id, err)
			}
		}
		want := int64(len(r.agents)) * int64(*seconds) * int64(*labels) * requestsPerLabel
		lost += (want - sum.Total.Count) / (int64(*labels) * requestsPerLabel)
	}
	fmt.Printf("snapshots sent = %d, lost = %d\n", sent.Load(), lost)
	switch {
	case lost != 0:
		return fmt.Errorf("%d snapshots sent are not in their runs' summaries", lost)
	case short > 0:
		return fmt.Errorf("the live streams missed %d seconds", short)
	}
	return nil
}

// maxStreams is how many live streams one user may follow at once (the server's bound): the runs
// past it are not followed, and their seconds not timed.
const maxStreams = 8

// requestsPerLabel is how many requests each label of a snapshot counts.
const requestsPerLabel = 100

// waitHello is what a simulated agent says when it asks for work, waiting for it as real agents do: the protocol this build's agents
// speak, so that the server never refuses the simulation as an old agent (a number written here
// rotted once, and bench-runs.sh printed nothing).
var waitHello = map[string]any{"protocol": barrage.AgentProtocol, "version": "ingest", "cores": 2, "wait_seconds": 5}

// agent is a simulated agent.
type agent struct {
	id string
	c  client
	// The shard it was given, of run, to start at start.
	shard, run string
	lease      int64
	start      time.Time
}

// poll asks for work, a long poll after another, until the agent is given a shard; then it
// sends itself on leased. The first poll's answer calls asked.
func (a *agent) poll(ctx context.Context, leased chan<- *agent, asked func()) {
	for first := true; ; first = false {
		var work struct {
			Shard *struct {
				ShardID    string `json:"shard_id"`
				RunID      string `json:"run_id"`
				Lease      int64  `json:"lease"`
				StartsInMS int64  `json:"starts_in_ms"`
			} `json:"shard"`
		}
		_, err := a.c.do(ctx, "POST", "/v1/agent/lease", waitHello, &work)
		if first {
			asked()
		}
		switch {
		case err != nil:
			fmt.Fprintln(os.Stderr, "ingest: a poll failed:", err)
			time.Sleep(time.Second)
		case work.Shard != nil:
			a.shard, a.run, a.lease = work.Shard.ShardID, work.Shard.RunID, work.Shard.Lease
			a.start = time.Now().Add(time.Duration(work.Shard.StartsInMS) * time.Millisecond)
			leased <- a
			return
		}
	}
}

// simRun is one run of simulated agents and what its live stream delivered.
type simRun struct {
	id     string
	agents []*agent
	start  time.Time
	ended  atomic.Bool
	// seconds are the seconds every agent of the run sends, encoded.
	seconds []json.RawMessage

	mu      sync.Mutex
	arrived map[int64]time.Time
	reports []time.Duration // how long each report took, from request to answer
}

func (r *simRun) took(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reports = append(r.reports, d)
}

func (r *simRun) arrive(idx int64, ended bool) {
	if ended {
		r.ended.Store(true)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.arrived[idx]; !ok {
		r.arrived[idx] = time.Now()
	}
}

// startRun runs the script on agents and hands each its shard.
func startRun(ctx context.Context, user client, agents []*agent, labels, seconds int, leased <-chan *agent) (*simRun, error) {
	var src strings.Builder
	src.WriteString("version: 1\nname: ingest\nsession:\n  groups:\n    - name: g\n      requests:\n")
	for l := range labels {
		fmt.Fprintf(&src, "        - { name: r%02d, url: \"http://127.0.0.1:9/%d\" }\n", l, l)
	}
	fmt.Fprintf(&src, "load:\n  vus: %d\n  duration: %ds\n", len(agents), seconds+30)
	var sc struct{ ID string }
	if _, err := user.do(ctx, "POST", "/v1/scripts", map[string]any{"source": src.String()}, &sc); err != nil {
		return nil, err
	}
	ids := make([]string, len(agents))
	for i, a := range agents {
		ids[i] = a.id
	}
	r := &simRun{agents: agents, arrived: map[int64]time.Time{}}
	var created struct{ ID string }
	if _, err := user.do(ctx, "POST", "/v1/runs", map[string]any{"script_id": sc.ID, "agent_ids": ids}, &created); err != nil {
		return nil, err
	}
	r.id = created.ID
	// Its agents take their shards on their next poll: runs start one after another, so that
	// every agent leased now is one of this run's.
	starts := make([]time.Time, 0, len(agents))
	for range agents {
		select {
		case a := <-leased:
			if a.run != r.id {
				return nil, fmt.Errorf("agent %s was given a shard of run %s, not %s", a.id, a.run, r.id)
			}
			starts = append(starts, a.start)
		case <-time.After(time.Minute):
			return nil, fmt.Errorf("run %s: %d of its %d agents took their shards in a minute", r.id, len(starts), len(agents))
		}
	}
	r.start = slices.MinFunc(starts, time.Time.Compare)
	// The run's seconds, encoded once: its agents send the same figures, so that the simulation
	// spends its time sending, not making histograms, on the machine it shares with the server.
	rng := rand.New(rand.NewPCG(uint64(len(agents)), 7))
	for s := range seconds {
		enc, err := json.Marshal(snapshot(rng, int64(s), r.start, labels))
		if err != nil {
			return nil, err
		}
		r.seconds = append(r.seconds, enc)
	}
	return r, nil
}

// report sends the agent's seconds of run r, one a second as each ends, the last with the
// shard's end. A report the server refuses is kept and sent again with the next, as a real
// agent does; it returns how many reports were refused.
func (a *agent) report(ctx context.Context, r *simRun, seconds int, sent *atomic.Int64) (refused int64) {
	var pending []json.RawMessage
	for s := 0; s < seconds || len(pending) > 0; s++ {
		if s < seconds {
			time.Sleep(time.Until(r.start.Add(time.Duration(s+1) * time.Second)))
			pending = append(pending, r.seconds[s])
			sent.Add(1)
		} else if s > seconds+30 {
			return refused // given up: the lost snapshots say so
		} else {
			time.Sleep(time.Second)
		}
		body := map[string]any{"lease": a.lease, "seconds": pending}
		if s >= seconds-1 {
			body["end"] = map[string]any{"reason": "finished"}
		}
		began := time.Now()
		_, err := a.c.do(ctx, "POST", "/v1/agent/shards/"+a.shard+"/report", body, nil)
		r.took(time.Since(began))
		if err != nil {
			refused++
			continue
		}
		pending = pending[:0]
	}
	return refused
}

// snapshot is one second of an agent's metrics: labels of 100 requests each.
func snapshot(rng *rand.Rand, idx int64, start time.Time, labels int) map[string]any {
	snap := &metrics.Snapshot{Start: start.Add(time.Duration(idx) * time.Second), Duration: time.Second, Labels: map[metrics.Key]*metrics.Stats{}}
	for l := range labels {
		st := metrics.NewStats()
		for range 100 {
			st.Requests++
			st.Latency.Record(time.Duration(1+rng.IntN(50_000)) * time.Microsecond)
		}
		st.BytesIn, st.BytesOut = 100*500, 100*120
		snap.Labels[metrics.RequestKey(fmt.Sprintf("r%02d", l))] = st
	}
	enc, _ := snap.MarshalBinary()
	return map[string]any{"index": idx, "snapshot": enc, "health": map[string]any{
		"cpu": 0.3, "cores": 2, "lateness_max_ns": 0, "lateness_sum_ns": 0, "scheduled": 0, "late": 0, "dropped": 0, "active_vus": 1,
	}}
}

// follow reads the run's live stream and reports each second's index as it arrives, and when
// the run has ended.
func follow(ctx context.Context, c client, run string, got func(idx int64, ended bool)) {
	req, _ := http.NewRequestWithContext(ctx, "GET", c.server+"/v1/runs/"+run+"/live", nil)
	req.Header.Set("Authorization", "Bearer "+c.bearer)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<22)
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
			if n, err := strconv.ParseInt(id, 10, 64); err == nil {
				got(n, false)
			}
		}
		if sc.Text() == "event: end" {
			got(0, true)
		}
	}
}

// cpu is the CPU time (user and system) that the pids and all their descendants have used, from
// /proc: a process's own time and that of its children it has reaped, so that PostgreSQL's
// backends are counted whether they live through the measurement or not.
func cpu(pids string) (time.Duration, error) {
	type proc struct {
		ppid  int64
		ticks int64
	}
	procs := map[int64]proc{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.ParseInt(e.Name(), 10, 64)
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// After the command in parentheses (which may hold spaces): ppid is the 4th field,
		// utime, stime, cutime and cstime the 14th to 17th, in clock ticks (100 a second).
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
		var p proc
		p.ppid, _ = strconv.ParseInt(f[1], 10, 64)
		for _, k := range []int{11, 12, 13, 14} {
			n, _ := strconv.ParseInt(f[k], 10, 64)
			p.ticks += n
		}
		procs[pid] = p
	}
	in := map[int64]bool{}
	for _, s := range strings.Split(pids, ",") {
		if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
			if _, ok := procs[n]; !ok {
				return 0, fmt.Errorf("no process %d", n)
			}
			in[n] = true
		}
	}
	// Add descendants until none is new.
	for grew := true; grew; {
		grew = false
		for pid, p := range procs {
			if !in[pid] && in[p.ppid] {
				in[pid], grew = true, true
			}
		}
	}
	var ticks int64
	for pid := range in {
		ticks += procs[pid].ticks
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// dirSize is how many bytes the files under dir hold; 0 without a dir. Of a PostgreSQL data
// folder it counts what the tables and indexes hold (base/), not the write-ahead log, whose
// segments are recycled.
func dirSize(dir string) (int64, error) {
	if dir == "" {
		return 0, nil
	}
	var n int64
	err := filepath.WalkDir(filepath.Join(dir, "base"), func(_ string, d os.DirEntry, err error) error {
		if err != nil {
			return nil // a file dropped meanwhile
		}
		if info, err := d.Info(); err == nil && !d.IsDir() {
			n += info.Size()
		}
		return nil
	})
	return n, err
}

// each calls f(0) to f(n-1), 32 at a time, and returns the first error.
func each(n int, f func(i int) error) error {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// measure is the CPU that the pids and their descendants use over d, in cores.
func measure(pids string, d time.Duration) (float64, error) {
	before, err := cpu(pids)
	if err != nil {
		return 0, err
	}
	began := time.Now()
	time.Sleep(d)
	after, err := cpu(pids)
	return (after - before).Seconds() / time.Since(began).Seconds(), err
}
