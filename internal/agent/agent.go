// Package agent is the measuring agent: the loop that `barrage agent` runs. It asks the server
// for work over HTTPS (no inbound port, so it works behind NAT), runs each shard it is given
// with the engine, and reports the shard's seconds every second. It keeps its own limits and
// the run's deadline on its own clock, and stops its load when it loses the server for
// LostAfter, keeping the seconds it could not send to send them later.
package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/engine"
	"github.com/barrage-load/barrage/internal/monitor"
	"github.com/barrage-load/barrage/internal/netpolicy"
	"github.com/barrage-load/barrage/internal/pipeline"
	"github.com/barrage-load/barrage/internal/pluginhost"
	"github.com/barrage-load/barrage/internal/pluginset"
	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/internal/telemetry"
)

// Config is what an agent needs.
type Config struct {
	// Server is the API's base URL; Token the agent's secret.
	Server, Token string
	// Version is this build's version, told to the server.
	Version string
	// Limits are the agent's own limits per job, held whatever the server asks.
	Limits barrage.Limits
	// Targets is where the agent's load may go; nil refuses every internal address (the zero
	// Policy), as an agent that runs strangers' scripts must by default.
	Targets *netpolicy.Policy
	// LostAfter is how long the agent goes on without reaching the server before it stops
	// its load (default 10s).
	LostAfter time.Duration
	// Plugins is the local plugin directory the agent runs plugins from, each checked against
	// the digest the script pins; PluginHost how it starts them (its Targets is Targets).
	// Empty: the agent runs no plugin.
	Plugins    pluginset.Dir
	PluginHost pluginhost.Options
	// PluginCache is the folder the marketplace plugins that scripts pin are kept in, by
	// sha256, after they were fetched from the server and verified.
	PluginCache string
	// Sandbox says whether PluginHost holds the whole kernel sandbox: told to the server, which
	// gives a shared agent without it only the marketplace plugins that admins published.
	Sandbox bool
	// HTTP is the client to reach the server with; nil uses one with sane timeouts.
	HTTP *http.Client
	Log  *slog.Logger
	// Metrics, when set, counts the agent's shards, reports and plugin starts.
	Metrics *telemetry.Agent
}

// Agent is a running agent.
type Agent struct {
	cfg    Config
	client *api.ClientWithResponses
	log    *slog.Logger
	// jobSlots bounds the jobs (debug, generate) done at once.
	jobSlots chan struct{}
}

// New returns an agent of cfg.
func New(cfg Config) (*Agent, error) {
	if cfg.Server == "" || cfg.Token == "" {
		return nil, errors.New("an agent needs the server's URL and its token")
	}
	if cfg.LostAfter <= 0 {
		cfg.LostAfter = barrage.AgentOnlineWithin
	}
	if cfg.Targets == nil {
		cfg.Targets = &netpolicy.Policy{}
	}
	// A plugin's granted hosts are reached through the policy the load goes through: a grant
	// reaches nothing the agent refuses.
	cfg.PluginHost.Targets = cfg.Targets
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	hc := cfg.HTTP
	if hc == nil {
		// Long enough for a lease's wait; reports are small.
		hc = &http.Client{Timeout: leaseWait + 10*time.Second}
	}
	cl, err := api.NewClientWithResponses(strings.TrimRight(cfg.Server, "/"), api.WithHTTPClient(hc),
		api.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+cfg.Token)
			r.Header.Set("User-Agent", "barrage-agent/"+cfg.Version)
			return nil
		}))
	if err != nil {
		return nil, err
	}
	return &Agent{cfg: cfg, client: cl, log: cfg.Log, jobSlots: make(chan struct{}, maxJobs)}, nil
}

// leaseWait is how long a lease waits on the server for work (control.MaxLeaseWait): asking
// again that often keeps the agent online.
const leaseWait = 5 * time.Second

// ErrRefused means the server refused the agent for good: its token is wrong, it was removed or
// disabled, or it is too old for the server.
var ErrRefused = errors.New("the server refused this agent")

// Run asks for work and runs it until ctx ends or the server refuses the agent.
func (a *Agent) Run(ctx context.Context) error {
	a.log.Info("agent started", slog.String("server", a.cfg.Server), slog.String("version", a.cfg.Version))
	backoff := time.Second
	for ctx.Err() == nil {
		work, err := a.lease(ctx)
		switch {
		case errors.Is(err, ErrRefused):
			return err
		case err != nil:
			if ctx.Err() != nil {
				break
			}
			a.log.Warn("cannot reach the server; retrying", slog.String("error", err.Error()), slog.Duration("in", backoff))
			sleep(ctx, backoff)
			backoff = min(backoff*2, 15*time.Second)
			continue
		case work != nil:
			if work.Pings != nil {
				a.answer(ctx, *work.Pings)
			}
			a.startJobs(ctx, work.Jobs)
			if work.Shard != nil {
				a.runShard(ctx, work.Shard)
			}
		}
		backoff = time.Second
	}
	return nil
}

func (a *Agent) lease(ctx context.Context) (*api.AgentWork, error) {
	res, err := a.client.AgentLeaseWithResponse(ctx, api.AgentLeaseJSONRequestBody{
		Protocol: barrage.AgentProtocol, Version: a.cfg.Version, Cores: cores(), WaitSeconds: ptr(int(leaseWait / time.Second)),
		Sandbox: ptr(a.cfg.Sandbox),
	})
	if err != nil {
		return nil, err
	}
	switch res.StatusCode() {
	case http.StatusOK:
		return res.JSON200, nil
	case http.StatusNoContent:
		return nil, nil
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusUpgradeRequired:
		return nil, fmt.Errorf("%w: %w", ErrRefused, api.ProblemError(res.HTTPResponse, res.Body))
	}
	return nil, api.ProblemError(res.HTTPResponse, res.Body)
}

// answer answers the server's pings, each at once.
func (a *Agent) answer(ctx context.Context, pings []uuid.UUID) {
	for _, id := range pings {
		res, err := a.client.AgentAnswerPingWithResponse(ctx, id)
		if err == nil && res.StatusCode() != http.StatusNoContent {
			err = api.ProblemError(res.HTTPResponse, res.Body)
		}
		if err != nil {
			a.log.Warn("answer a ping", slog.String("error", err.Error()))
		}
	}
}

// runShard runs one shard to its end and reports it, however it ends.
func (a *Agent) runShard(ctx context.Context, job *api.ShardJob) {
	log := a.log.With(slog.String("run_id", job.RunId.String()), slog.String("shard_id", job.ShardId.String()))
	received := time.Now()
	sh := &shard{agent: a, job: job, log: log}
	s, opts, set, err := a.prepare(ctx, job, received)
	if err != nil {
		log.Warn("shard refused", slog.String("error", err.Error()))
		sh.finish(ctx, &api.ShardEndReport{Reason: api.StopReasonFailed, Detail: ptr(err.Error())})
		return
	}
	defer set.Close()
	a.cfg.Metrics.ShardStarted()
	defer a.cfg.Metrics.ShardEnded()
	opts.OnSecond = sh.add
	opts.Log = log
	o := pipeline.Options{Engine: opts}
	if len(s.Monitors) > 0 && opts.Segment.From == 0 {
		// One shard scrapes the target's metrics, the one whose segment starts the run, through
		// the agent's network policy as its load goes.
		sh.monitors = newMonitorValues(opts.Start)
		o.Monitors = monitor.Client(opts.Targets.Dialer(net.Dialer{Timeout: 800 * time.Millisecond}).DialContext)
		o.OnMonitors = sh.monitors.put
	}
	// The load outlives ctx by a drain: an agent told to stop (SIGTERM, Ctrl-C) ends its load at
	// the requests' edge and reports every request it sent before it exits.
	l, err := pipeline.Start(context.WithoutCancel(ctx), s, o)
	if err != nil {
		reason := api.StopReasonFailed
		if errors.Is(err, barrage.ErrLimitExceeded) {
			reason = api.StopReasonAbortedLimit
		}
		log.Warn("shard cannot start", slog.String("error", err.Error()))
		sh.finish(ctx, &api.ShardEndReport{Reason: reason, Detail: ptr(err.Error())})
		return
	}
	if sw := opts.Sweep; sw != nil {
		log.Info("sweep started", slog.Any("vus", sw.VUs), slog.Duration("step", sw.Step), slog.Time("start", opts.Start))
	} else {
		log.Info("shard started", slog.String("segment", job.Segment), slog.Time("start", opts.Start))
	}
	stopped := context.AfterFunc(ctx, func() {
		log.Warn("the agent is stopping: draining the shard's load and reporting it")
		l.Drain(run.Failed, "the agent was stopped before the load's end; every request it sent is counted", drainWait)
	})
	defer stopped()
	sh.report(ctx, l)
	out := l.Wait()
	end := &api.ShardEndReport{Reason: api.StopReason(out.Stop.Reason.String())}
	if out.Stop.Detail != "" {
		end.Detail = ptr(out.Stop.Detail)
	}
	if out.Result != nil {
		end.LateStartMs = ptr(out.Result.LateStart.Milliseconds())
	}
	if out.Err != nil {
		end.Reason, end.Detail = api.StopReasonFailed, ptr(out.Err.Error())
	}
	for i, f := range out.Account.MonitorFailures {
		out.Account.MonitorFailures[i].LastError = strings.ToValidUTF8(f.LastError[:min(len(f.LastError), 2000)], "")
	}
	if end.Result, err = api.ShardResultOf(out.Account); err != nil {
		end.Reason, end.Detail = api.StopReasonFailed, ptr("encode the shard's account: "+err.Error())
	}
	log.Info("shard ended", slog.String("stop", out.Stop.String()))
	sh.finish(ctx, end)
}

// prepare checks the job's script against its digest, loads it with its data files, starts its
// plugins (each must have the digest the script pins: its binary's in the local plugin
// directory, or its signed SHA256SUMS for a marketplace plugin, fetched and verified),
// and sets the engine's options: the shared start, the segment, and the tightest of the job's
// limits and the agent's own. Close the set when the shard has ended.
func (a *Agent) prepare(ctx context.Context, job *api.ShardJob, received time.Time) (*script.Script, engine.Options, *pluginset.Set, error) {
	var opts engine.Options
	sum := sha256.Sum256(job.Script.Source)
	if hex.EncodeToString(sum[:]) != job.Script.Sha256 {
		return nil, opts, nil, errors.New("the script does not match its sha256")
	}
	files := make(map[string][]byte, len(job.Script.Files))
	for _, f := range job.Script.Files {
		files[f.Name] = f.Content
	}
	s, err := script.LoadBundle(job.Script.Source, files)
	if err != nil {
		return nil, opts, nil, fmt.Errorf("load the script: %w", err)
	}
	seg, err := run.ParseSegment(job.Segment)
	if err != nil {
		return nil, opts, nil, err
	}
	load, err := job.Load.Overrides()
	if err == nil {
		err = load.Validate()
	}
	if err != nil {
		return nil, opts, nil, fmt.Errorf("the run's load: %w", err)
	}
	opts = engine.LoadOptions(load)
	// The run's environment is the only one its script reads: never the agent's own.
	env := map[string]string{}
	if job.Env != nil {
		env = *job.Env
	}
	opts.Env = func(name string) (string, bool) { v, ok := env[name]; return v, ok }
	if job.Secrets != nil {
		opts.Secrets = *job.Secrets
	}
	if err := a.canRun(s); err != nil {
		return nil, opts, nil, err
	}
	targets := a.targets(job.Destinations)
	var set *pluginset.Set
	if len(s.Plugins) > 0 {
		host := a.cfg.PluginHost
		host.Targets = targets // a grant reaches nothing the shard's load may not
		pins := map[string]string{}
		for _, p := range job.Script.Plugins {
			pins[p.Alias] = p.Sha256
		}
		w := run.Workload(s, opts.Overrides())
		vus := max(w.VUs, w.MaxVUs)
		set, err = pluginset.Start(ctx, s, pluginset.Options{Source: a.source(job.Script.Plugins), Host: host,
			VUs: int(seg.Scale(int64(vus))), Pins: pins})
		a.cfg.Metrics.PluginsStarted(err)
		if err != nil {
			return nil, opts, nil, fmt.Errorf("start the script's plugins: %w", err)
		}
		opts.Plugins = set.Plugins
	}
	limits := a.cfg.Limits
	if job.MaxVus != nil {
		limits = limits.Tightest(barrage.Limits{MaxVUs: *job.MaxVus})
	}
	if job.MaxRunDurationSeconds != nil {
		limits = limits.Tightest(barrage.Limits{MaxRunDuration: time.Duration(*job.MaxRunDurationSeconds) * time.Second})
	}
	opts.Start = received.Add(time.Duration(job.StartsInMs) * time.Millisecond) // the server's "starts in": agents' clocks differ
	opts.Segment, opts.Limits, opts.Targets = seg, limits, targets
	return s, opts, set, nil
}

// targets is the policy a shard's or a job's requests, monitors and plugins' grants go through:
// the agent's, bounded to the destinations the server sent (for a run or a job on a shared
// agent).
func (a *Agent) targets(destinations *[]string) *netpolicy.Policy {
	if destinations == nil {
		return a.cfg.Targets
	}
	p := *a.cfg.Targets
	var err error
	if p.Destinations, err = netpolicy.ParseDestinations(*destinations); err != nil {
		// Not one the server writes: nothing may be reached rather than anything.
		a.log.Warn("the server sent destinations this agent cannot read", slog.String("error", err.Error()))
		p.Destinations = map[string]netip.Addr{}
	}
	return &p
}

// source is where the agent finds the plugins of a script whose marketplace plugins are pins:
// those fetched from the server into its cache, the others (named without a namespace) in its
// plugin directory.
func (a *Agent) source(pins []api.PluginPin) pluginset.Source {
	return pluginset.Sources{&pluginset.Market{Pins: api.PinsFrom(pins), Cache: a.cfg.PluginCache, Fetch: a.fetchArtifact, Log: a.log},
		pluginset.OwnPlugins{Source: a.cfg.Plugins}}
}

// fetchArtifact opens the marketplace artifact with sha256 from the server.
func (a *Agent) fetchArtifact(ctx context.Context, sha256 string) (io.ReadCloser, error) {
	res, err := a.client.AgentFetchArtifact(ctx, sha256)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		defer res.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		return nil, api.ProblemError(res, body)
	}
	return res.Body, nil
}

// shard is a shard under way: the seconds it has not yet had acknowledged, and its reports.
type shard struct {
	agent *Agent
	job   *api.ShardJob
	log   *slog.Logger
	// monitors, when the shard scrapes the script's monitors, are their values by second.
	monitors *monitorValues

	mu      sync.Mutex
	pending []api.ShardSecond
	// sending serialises reports: the reporter's and the shard's end would otherwise send the
	// same seconds twice and drop them twice.
	sending sync.Mutex
	// gone is set when the server has refused a report for good (a stale lease, an ended
	// shard): nothing more is sent.
	gone bool
}

// add queues a second for the next report; the engine calls it as each second ends.
func (sh *shard) add(sec run.Second) {
	snap, err := sec.Snapshot.MarshalBinary()
	if err != nil {
		sh.log.Error("encode a second", slog.String("error", err.Error()))
		return
	}
	out := api.ShardSecond{Index: sec.Index, Snapshot: snap, Health: api.HealthOf(sec.Health)}
	if sh.monitors != nil {
		if m := sh.monitors.take(sec.Index); m != nil {
			units := make([]api.ShardSecondMonitorUnits, len(m.units))
			for i, u := range m.units {
				units[i] = api.ShardSecondMonitorUnits(u)
			}
			out.Monitors, out.MonitorUnits = &m.values, &units
		}
	}
	sh.mu.Lock()
	sh.pending = append(sh.pending, out)
	sh.mu.Unlock()
}

// monitorValues hands each second's monitor values, scraped at the second's end, to the
// second's report, which waits for them a little: the scrape and the second end together.
type monitorValues struct {
	start time.Time
	mu    sync.Mutex
	vals  map[int64]*scraped
	added chan struct{} // closed and replaced at each put
}

// scraped is one second's monitor values and their units.
type scraped struct {
	values []*float64
	units  []string
}

func newMonitorValues(start time.Time) *monitorValues {
	return &monitorValues{start: start, vals: map[int64]*scraped{}, added: make(chan struct{})}
}

func (m *monitorValues) put(index int64, vals []*float64, units []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.vals[index] = &scraped{values: vals, units: units}
	close(m.added)
	m.added = make(chan struct{})
}

// take returns the values of the second of index, waiting for them until a second after the
// second's end (a scrape gives up after 800 ms); nil when none came.
func (m *monitorValues) take(index int64) *scraped {
	deadline := time.NewTimer(time.Until(m.start.Add(time.Duration(index+2) * time.Second)))
	defer deadline.Stop()
	for {
		m.mu.Lock()
		vals, ok := m.vals[index]
		delete(m.vals, index)
		added := m.added
		m.mu.Unlock()
		if ok {
			return vals
		}
		select {
		case <-added:
		case <-deadline.C:
			return nil
		}
	}
}

// load is a shard's load as its reporter sees it: an engine run, or a sweep's levels.
type load interface {
	Done() <-chan struct{}
	Stop(reason run.StopReason, detail string)
	Drain(reason run.StopReason, detail string, within time.Duration)
}

// drainWait is how long a shard told to stop waits for its requests in flight, so that what the
// target saw is measured, before it cuts them.
const drainWait = 5 * time.Second

// flushWait is how long an agent that is stopping goes on trying to report what its shard
// measured: a process that is told to end must end.
const flushWait = 15 * time.Second

// report sends the shard's seconds each second while it runs, and stops its load when the
// server says so or when the server has been out of reach for LostAfter. It goes on after ctx
// ends, while the load drains.
func (sh *shard) report(ctx context.Context, r load) {
	ctx = context.WithoutCancel(ctx)
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		lastOK := time.Now()
		for {
			select {
			case <-r.Done():
				return
			case <-tick.C:
			}
			stop, err := sh.send(ctx, nil)
			switch {
			case err == nil:
				lastOK = time.Now()
				if stop != nil {
					r.Drain(stop.Reason, stop.Detail, drainWait)
				}
			case sh.isGone():
				r.Stop(run.Failed, err.Error())
			case time.Since(lastOK) > sh.agent.cfg.LostAfter:
				sh.log.Warn("lost the server; stopping the load", slog.String("error", err.Error()))
				r.Drain(run.Failed, fmt.Sprintf("the agent could not reach the server for %s", sh.agent.cfg.LostAfter), drainWait)
			default:
				sh.log.Warn("report failed; will retry", slog.String("error", err.Error()))
			}
		}
	}()
}

// finish sends what is left and the shard's end, retrying while the server is out of reach:
// the seconds an agent kept while cut off reach the server when it is back, for 10 minutes at
// most. An agent that is stopping (ctx ended, now or while it retries) tries for flushWait more.
func (sh *shard) finish(ctx context.Context, end *api.ShardEndReport) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Minute)
	defer cancel()
	stopping := context.AfterFunc(ctx, func() { time.AfterFunc(flushWait, cancel) })
	defer stopping()
	backoff := time.Second
	for {
		_, err := sh.send(fctx, end)
		switch {
		case err == nil:
			return
		case sh.isGone():
			sh.log.Warn("the shard's end was not recorded", slog.String("error", err.Error()))
			return
		case fctx.Err() != nil:
			sh.log.Error("gave up reporting the shard's end", slog.String("error", err.Error()))
			return
		}
		sh.log.Warn("report failed; will retry", slog.String("error", err.Error()), slog.Duration("in", backoff))
		sleep(fctx, backoff)
		backoff = min(backoff*2, 15*time.Second)
	}
}

// send reports the pending seconds (in batches the server accepts) and, once they are all
// through, end if given. It returns the server's stop instruction, if any.
func (sh *shard) send(ctx context.Context, end *api.ShardEndReport) (*run.Stop, error) {
	sh.sending.Lock()
	defer sh.sending.Unlock()
	for {
		sh.mu.Lock()
		batch := sh.pending[:min(len(sh.pending), maxBatch)]
		last := len(batch) == len(sh.pending)
		sh.mu.Unlock()
		body := api.ShardReport{Lease: sh.job.Lease, Seconds: batch}
		if body.Seconds == nil {
			body.Seconds = []api.ShardSecond{}
		}
		if last {
			body.End = end
		}
		res, err := sh.agent.client.AgentReportWithResponse(ctx, sh.job.ShardId, body)
		if err == nil && res.JSON200 == nil {
			err = api.ProblemError(res.HTTPResponse, res.Body)
		}
		sh.agent.cfg.Metrics.Reported(len(batch), err)
		if res == nil {
			return nil, err
		}
		if res.JSON200 == nil {
			// Gone, or refused as it is (a report the server finds invalid now, it always will):
			// the shard ends, saying why, rather than retry for minutes.
			switch res.StatusCode() {
			case http.StatusConflict, http.StatusNotFound, http.StatusUnauthorized, http.StatusForbidden,
				http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
				sh.mu.Lock()
				sh.gone = true
				sh.mu.Unlock()
			}
			return nil, api.ProblemError(res.HTTPResponse, res.Body)
		}
		sh.mu.Lock()
		sh.pending = sh.pending[len(batch):]
		sh.mu.Unlock()
		if last {
			if p := res.JSON200.Pings; p != nil {
				sh.agent.answer(ctx, *p)
			}
			sh.agent.startJobs(ctx, res.JSON200.Jobs)
			return toStop(res.JSON200), nil
		}
	}
}

// maxBatch is the most seconds one report carries (the server's limit).
const maxBatch = 300

func (sh *shard) isGone() bool {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.gone
}

func toStop(a *api.ReportAnswer) *run.Stop {
	in, err := a.Stop.Get()
	if err != nil {
		return nil // null: go on
	}
	var st run.Stop
	if err := st.Reason.UnmarshalText([]byte(in.Reason)); err != nil {
		st.Reason = run.Failed
	}
	st.Detail = in.Detail
	return &st
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func ptr[T any](v T) *T { return &v }

// cores is how many cores the engine may use: what the agent tells the server.
func cores() int { return runtime.GOMAXPROCS(0) }
