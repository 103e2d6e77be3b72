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
	"slices"
	"strconv"
	"strings"
	"sync"
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
	labels := flag.Int("labels", 20, "request labels in each snapshot")
	seconds := flag.Int("seconds", 60, "seconds of metrics each agent sends")
	pids := flag.String("pids", "", "comma-separated pids whose CPU to measure (the server and its PostgreSQL)")
	flag.Parse()
	if *server == "" || *token == "" {
		return errors.New("want --server and --token")
	}
	ctx := context.Background()
	user := client{server: *server, bearer: *token, hc: &http.Client{Timeout: time.Minute}}

	// The agents, online.
	tokens := make([]string, *agents)
	ids := make([]string, *agents)
	for i := range tokens {
		var a struct{ ID, Token string }
		if _, err := user.do(ctx, "POST", "/v1/agents", map[string]any{"name": fmt.Sprintf("sim-%02d", i)}, &a); err != nil {
			return err
		}
		tokens[i], ids[i] = a.Token, a.ID
	}
	// The protocol this build's agents speak, so that the server never refuses the simulation as
	// an old agent (a number written here rotted once, and bench-runs.sh printed nothing).
	hello := map[string]any{"protocol": barrage.AgentProtocol, "version": "ingest", "cores": 2, "wait_seconds": 0}
	for _, t := range tokens {
		if _, err := (client{*server, t, user.hc}).do(ctx, "POST", "/v1/agent/lease", hello, nil); err != nil {
			return err
		}
	}

	// One script of many requests, run on all of them.
	var src strings.Builder
	src.WriteString("version: 1\nname: ingest\nsession:\n  groups:\n    - name: g\n      requests:\n")
	for l := range *labels {
		fmt.Fprintf(&src, "        - { name: r%02d, url: \"http://127.0.0.1:9/%d\" }\n", l, l)
	}
	fmt.Fprintf(&src, "load:\n  vus: %d\n  duration: %ds\n", *agents, *seconds+30)
	var sc struct{ ID string }
	if _, err := user.do(ctx, "POST", "/v1/scripts", map[string]any{"source": src.String()}, &sc); err != nil {
		return err
	}
	var r struct{ ID string }
	if _, err := user.do(ctx, "POST", "/v1/runs", map[string]any{"script_id": sc.ID, "agent_ids": ids}, &r); err != nil {
		return err
	}

	type job struct {
		Shard struct {
			ShardID    string `json:"shard_id"`
			Lease      int64  `json:"lease"`
			StartsInMS int64  `json:"starts_in_ms"`
		} `json:"shard"`
	}
	jobs := make([]job, *agents)
	var start time.Time
	for i, t := range tokens {
		if _, err := (client{*server, t, user.hc}).do(ctx, "POST", "/v1/agent/lease", hello, &jobs[i]); err != nil {
			return err
		}
		if i == 0 {
			start = time.Now().Add(time.Duration(jobs[0].Shard.StartsInMS) * time.Millisecond)
		}
	}

	// Follow the live stream: when did each second arrive?
	arrived := map[int64]time.Time{}
	var mu sync.Mutex
	liveCtx, stopLive := context.WithCancel(ctx)
	defer stopLive()
	go follow(liveCtx, user, r.ID, func(idx int64) {
		mu.Lock()
		arrived[idx] = time.Now()
		mu.Unlock()
	})

	before, err := cpu(*pids)
	if err != nil {
		return err
	}
	began := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, *agents)
	for i, t := range tokens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ac := client{*server, t, &http.Client{Timeout: 30 * time.Second}}
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			for s := range *seconds {
				end := start.Add(time.Duration(s+1) * time.Second)
				time.Sleep(time.Until(end))
				body := map[string]any{"lease": jobs[i].Shard.Lease, "seconds": []any{snapshot(rng, int64(s), start, *labels)}}
				if s == *seconds-1 {
					body["end"] = map[string]any{"reason": "finished"}
				}
				if _, err := ac.do(ctx, "POST", "/v1/agent/shards/"+jobs[i].Shard.ShardID+"/report", body, nil); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	wall := time.Since(began)
	after, err := cpu(*pids)
	if err != nil {
		return err
	}
	close(errs)
	for err := range errs {
		return err
	}
	// Let the stream deliver the last seconds.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(arrived)
		mu.Unlock()
		if n >= *seconds {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	stopLive()

	mu.Lock()
	defer mu.Unlock()
	var delays []float64
	worst, worstIdx := 0.0, int64(0)
	for idx, at := range arrived {
		end := start.Add(time.Duration(idx+1) * time.Second)
		d := float64(at.Sub(end)) / float64(time.Millisecond)
		delays = append(delays, d)
		if d > worst {
			worst, worstIdx = d, idx
		}
	}
	if len(delays) < *seconds {
		return fmt.Errorf("the live stream gave %d of %d seconds", len(delays), *seconds)
	}
	slices.Sort(delays)
	p99 := delays[min(len(delays)-1, int(float64(len(delays))*0.99))]
	fmt.Printf("agents %d, labels %d, seconds %d, reports %d/s\n", *agents, *labels, *seconds, *agents)
	fmt.Printf("live delay worst: second %d, %.0f ms\n", worstIdx, worst)
	fmt.Printf("live delay p50 ms = %.0f\n", delays[len(delays)/2])
	fmt.Printf("live delay p99 ms = %.0f\n", p99)
	fmt.Printf("ingest cpu cores = %.3f\n", (after-before).Seconds()/wall.Seconds())
	return nil
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

// follow reads the run's live stream and reports each second's index as it arrives.
func follow(ctx context.Context, c client, run string, got func(int64)) {
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
				got(n)
			}
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
