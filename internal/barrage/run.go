package barrage

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Script is the immutable form of a test that agents execute: its source, the data files it
// reads, and a manifest of where it came from.
type Script struct {
	ID        uuid.UUID
	OwnerID   uuid.UUID // who made it
	ProjectID uuid.UUID
	Name      string
	Source    []byte
	SHA256    []byte
	Manifest  ScriptManifest
	Files     []ScriptFile // without Content when listed
	Created   time.Time
}

// ScriptManifest says what went into a script.
type ScriptManifest struct {
	TestID       *uuid.UUID      `json:"test_id,omitempty"`
	TestRevision int             `json:"test_revision,omitempty"`
	Plugins      []PluginPin     `json:"plugins"`
	Files        []ScriptFileRef `json:"files"`
}

// PluginPin is a plugin a script uses, pinned so that an agent runs exactly what was pinned.
//
// A plugin of an agent's own plugin directory is pinned by the digest of its binary. A
// marketplace plugin (Source PinMarketplace) is pinned by the digest of its version's signed
// SHA256SUMS, which names the artifact of every platform: an agent fetches the one for its
// platform by the digest on its line, after checking the document's signature by Signer.
type PluginPin struct {
	Alias   string `json:"alias"`
	Name    string `json:"name"`
	Version string `json:"version"`
	// Kind is the script's kind for it: session-element or url (source plugins ran at
	// generation).
	Kind   string `json:"kind"`
	SHA256 string `json:"sha256"`
	// Source is PinMarketplace for a marketplace plugin; empty for an agent's own.
	Source string `json:"source,omitempty"`
	// Signer is the public key that signed Shasums ("ed25519:<base64>"), SignerID its short id.
	Signer   string `json:"signer,omitempty"`
	SignerID string `json:"signer_id,omitempty"`
	// Shasums is the version's SHA256SUMS document, Signature its Ed25519 signature.
	Shasums   string `json:"shasums,omitempty"`
	Signature []byte `json:"signature,omitempty"`
	// Network is what the version declares it needs to reach: the run's grants stay within it.
	Network []string `json:"network,omitempty"`
}

// PinMarketplace is the Source of a marketplace plugin's pin.
const PinMarketplace = "marketplace"

// Marketplace says whether p pins a marketplace plugin.
func (p PluginPin) Marketplace() bool { return p.Source == PinMarketplace }

// Ref is the pinned plugin as name@version.
func (p PluginPin) Ref() string { return p.Name + "@" + p.Version }

// ScriptFileRef names a data file of a script by its digest.
type ScriptFileRef struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// ScriptFile is a data file shipped with a script.
type ScriptFile struct {
	Name    string
	Content []byte
	SHA256  []byte
}

// RunState is where a run is in its life: created → queued → starting → running → one of the
// end states, always with a reason.
type RunState string

// The run states. The end states match the engine's stop reasons.
const (
	RunCreated          RunState = "created"
	RunQueued           RunState = "queued"
	RunStarting         RunState = "starting"
	RunRunning          RunState = "running"
	RunFinished         RunState = "finished"
	RunFailed           RunState = "failed"
	RunCanceled         RunState = "canceled"
	RunTimedOut         RunState = "timed_out"
	RunAbortedLimit     RunState = "aborted_limit"
	RunAbortedThreshold RunState = "aborted_threshold"
)

// Ended reports whether the state is an end state.
func (s RunState) Ended() bool {
	switch s {
	case RunCreated, RunQueued, RunStarting, RunRunning:
		return false
	}
	return true
}

// LoadOverrides change a script's load for one run; zero fields leave the script's.
type LoadOverrides struct {
	VUs      int           `json:"vus,omitempty"`
	Duration time.Duration `json:"duration,omitempty"`
	Rate     float64       `json:"rate,omitempty"`
	// Stages replace the script's load with the open model's stages, one after the other.
	Stages []Stage `json:"stages,omitempty"`
	// Sweep, when set, makes the run a concurrency sweep: the script's session in the closed
	// model at each level in turn, on one agent.
	Sweep *Sweep `json:"sweep,omitempty"`
}

// Sweep is a concurrency sweep's levels (VUs, ascending) and how long each runs.
type Sweep struct {
	VUs  []int         `json:"vus"`
	Step time.Duration `json:"step"`
}

// The bounds of a sweep.
const (
	MaxSweepLevels = 32
	MaxSweepStep   = time.Hour
)

// validateSweep checks a sweep: alone (it is the run's load), 1 to MaxSweepLevels levels going
// up, each step from a second to MaxSweepStep.
func (l LoadOverrides) validateSweep() error {
	sw := l.Sweep
	switch {
	case l.VUs != 0 || l.Duration != 0 || l.Rate != 0 || len(l.Stages) > 0:
		return Invalid("sweep", "goes without vus, duration, rate and stages: its levels and steps are the run's load")
	case len(sw.VUs) == 0 || len(sw.VUs) > MaxSweepLevels:
		return Invalid("sweep.vus", fmt.Sprintf("give from 1 to %d levels", MaxSweepLevels))
	case sw.Step < time.Second || sw.Step > MaxSweepStep:
		return Invalid("sweep.step_seconds", fmt.Sprintf("must be from 1 to %d", int(MaxSweepStep/time.Second)))
	}
	for i, n := range sw.VUs {
		if n < 1 || (i > 0 && n <= sw.VUs[i-1]) {
			return Invalid(fmt.Sprintf("sweep.vus[%d]", i), "levels are at least 1 and go up")
		}
	}
	return nil
}

// Stage is a stage of the open model given for one run: it holds To iterations per second for
// Duration or, when Ramp, goes there linearly from the stage before's rate (0 before the first).
type Stage struct {
	To       float64       `json:"to"`
	Ramp     bool          `json:"ramp,omitempty"`
	Duration time.Duration `json:"duration"`
}

// The bounds of a run's stages.
const (
	MaxStages     = 100
	MaxStageRate  = 10_000_000
	MaxStagesTime = 30 * 24 * time.Hour
)

// Validate checks the overrides, naming the field at fault: no negative figure, stages without
// a rate or a duration beside them (the stages' durations are the run's), each stage at least
// a second long, and no more than MaxStages stages.
func (l LoadOverrides) Validate() error {
	if l.Sweep != nil {
		return l.validateSweep()
	}
	switch {
	case l.VUs < 0:
		return Invalid("vus", "must not be negative")
	case l.Duration < 0:
		return Invalid("duration", "must not be negative")
	case l.Rate < 0:
		return Invalid("rate", "must not be negative")
	case len(l.Stages) == 0:
		return nil
	case l.Rate > 0:
		return Invalid("stages", "go without rate: the stages are the rates")
	case l.Duration > 0:
		return Invalid("stages", "go without duration: the stages' durations add up to the run's")
	case len(l.Stages) > MaxStages:
		return Invalid("stages", fmt.Sprintf("%d stages; at most %d", len(l.Stages), MaxStages))
	}
	var total time.Duration
	for i, st := range l.Stages {
		switch {
		case st.To < 0 || st.To > MaxStageRate || st.To != st.To:
			return Invalid(fmt.Sprintf("stages[%d].rate", i), fmt.Sprintf("must be from 0 to %d per second", MaxStageRate))
		case st.Duration < time.Second:
			return Invalid(fmt.Sprintf("stages[%d].duration", i), "must be at least 1s")
		}
		total += st.Duration
		if total > MaxStagesTime {
			return Invalid("stages", fmt.Sprintf("add up to more than %s", MaxStagesTime))
		}
	}
	if !slices.ContainsFunc(l.Stages, func(st Stage) bool { return st.To > 0 }) {
		return Invalid("stages", "send nothing: at least one stage must have a rate above 0")
	}
	return nil
}

// Run is one execution of a script on one or more agents.
type Run struct {
	ID uuid.UUID
	// OwnerID is who started it: the run counts against their license.
	OwnerID   uuid.UUID
	ProjectID uuid.UUID
	ScriptID  uuid.UUID
	Manifest  RunManifest
	State     RunState
	Reason    string
	Load      LoadOverrides
	// Limits are the effective ones: the tightest of the license's and the agents'.
	Limits    Limits
	StartAt   *time.Time
	CreatedAt time.Time
	EndedAt   *time.Time
	// Stop is set when the run was asked to stop before its end: canceled, or aborted by a
	// threshold on its merged seconds.
	Stop   *RunStop
	Shards []Shard
	// Destinations, when not nil, are the only hosts and ports ("host:port") the run's shards
	// may load: set for a run on a shared agent, to the operator's open targets and those of
	// its owner's targets verified at its start.
	Destinations []string
	// VUs is the load admitted: the VUs of a closed model, the most of an open one.
	VUs int
	// Outcome is what an ended run's summary says in brief; nil before it has one.
	Outcome *RunOutcome
}

// RunFilter narrows a list of runs: to one project's, to some states, to the runs of one test's
// scripts, to those created since an instant and before another; nil fields do not narrow it.
type RunFilter struct {
	Project *uuid.UUID
	States  []RunState // any of these; all when empty
	TestID  *uuid.UUID
	Since   *time.Time // created at it or after
	Until   *time.Time // created before it
}

// RunOutcome is an ended run in brief, from its summary: what a list of runs shows.
type RunOutcome struct {
	Requests         int64   `json:"requests"`
	ErrorRate        float64 `json:"error_rate"`
	P95MS            float64 `json:"p95_ms"`
	ThresholdsFailed int     `json:"thresholds_failed"`
	GeneratorLimited bool    `json:"generator_limited"`
	// Incomplete says an agent's figures stop short of the run's end.
	Incomplete bool `json:"incomplete"`
	// BaselineVerdict is the run's verdict against its test's baseline (improved, regressed,
	// unchanged); empty when it was held against none.
	BaselineVerdict string `json:"baseline_verdict,omitempty"`
}

// PinnedAddresses are the addresses the run's destinations are pinned to, each once, in order:
// those its load is aimed at on shared agents.
func (r Run) PinnedAddresses() []string {
	var out []string
	for _, d := range r.Destinations {
		if _, addr, ok := strings.Cut(d, "@"); ok && !slices.Contains(out, addr) {
			out = append(out, addr)
		}
	}
	slices.Sort(out)
	return out
}

// Idempotency makes a retried create answer with what the first one created: the client's key,
// and the digest of the request it came with, since the key reused for another request is an
// error, not that request.
type Idempotency struct {
	Key     string
	Request []byte // sha256 of the request
}

// RunManifest pins what a run executes, so that it can be explained and repeated: the script's
// digest and the plugins and data files it uses, by digest. The agents that ran it, with their
// versions, are on its shards.
type RunManifest struct {
	ScriptSHA256 string `json:"script_sha256"`
	ScriptName   string `json:"script_name"`
	// TestID and TestRevision name the test and revision the script was generated from; nil
	// and 0 for a script sent as it is.
	TestID       *uuid.UUID      `json:"test_id,omitempty"`
	TestRevision int             `json:"test_revision,omitempty"`
	Plugins      []PluginPin     `json:"plugins"`
	Files        []ScriptFileRef `json:"files"`
	// Warnings are what the run was admitted despite: a deprecated plugin version, with why.
	Warnings []string `json:"warnings,omitempty"`
	// Env are the run's values of the script's environment variables, by the name the script
	// reads each from: the only environment a run's script reads on its agents.
	Env map[string]string `json:"env,omitempty"`
	// Secrets are the names of its owner's secrets the script reads: their values are handed
	// to each shard's agent when it takes it, and stored nowhere with the run.
	Secrets []string `json:"secrets,omitempty"`
}

// The bounds of a run's environment.
const (
	MaxRunEnv      = 100
	MaxRunEnvValue = 4096
)

// RunStop is why a run was asked to stop before its end.
type RunStop struct {
	State  RunState // RunCanceled or RunAbortedThreshold
	Reason string
}

// ShardState is where one agent's share of a run is.
type ShardState string

// The shard states: the run's end states, and lost for an agent that stopped reporting.
const (
	ShardPending ShardState = "pending"
	ShardRunning ShardState = "running"
	ShardLost    ShardState = "lost"
)

// Shard is a run's share on one agent.
type Shard struct {
	ID      uuid.UUID
	RunID   uuid.UUID
	AgentID *uuid.UUID // nil once the agent was removed
	// Segment is the engine segment, From:To/Of.
	From, To, Of int
	State        ShardState
	Reason       string
	Lease        int64
	AgentVersion string
	LeasedAt     *time.Time
	HeartbeatAt  *time.Time
	EndedAt      *time.Time
	LateStart    time.Duration
}

// Ended reports whether the shard has stopped, whatever the reason.
func (s Shard) Ended() bool { return s.State != ShardPending && s.State != ShardRunning }

// ShardAgents are the agents of r's shards, in their order.
func (r Run) ShardAgents() []uuid.UUID {
	var out []uuid.UUID
	for _, sh := range r.Shards {
		if sh.AgentID != nil {
			out = append(out, *sh.AgentID)
		}
	}
	return out
}

// ShardsEnded reports whether every shard of r has ended: r is over but for its summary.
func (r Run) ShardsEnded() bool {
	for _, sh := range r.Shards {
		if !sh.Ended() {
			return false
		}
	}
	return true
}

// ShardJob is what an agent needs to run its share of a run.
type ShardJob struct {
	Shard  Shard
	Run    Run
	Script Script // with its files' content
	// Secrets are the values of the run's secrets (Run.Manifest.Secrets), by name.
	Secrets map[string]string
}

// ShardSecond is one second of a shard's metrics as the agent sent it: the snapshot in its binary
// encoding, the generator's health as JSON and, from the shard that scrapes the script's
// monitors, their values as a JSON array (nil from the others).
type ShardSecond struct {
	ShardID  uuid.UUID
	Index    int64
	Snapshot []byte
	Health   []byte
	Monitors []byte
}

// ShardAccount is a shard's own account of its part in a run, as its agent sent it when the shard
// ended (nil before), and its agent's name (empty once the agent was removed).
type ShardAccount struct {
	ShardID   uuid.UUID
	AgentName string
	Result    []byte
}

// ShardEnd is how a shard ended, as its agent says.
type ShardEnd struct {
	State     ShardState
	Reason    string
	LateStart time.Duration
	// Result is the shard's own account (iterations, dropped, hook errors...), as JSON.
	Result []byte
}
