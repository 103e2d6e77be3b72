package run

import (
	"errors"
	"fmt"
	"time"

	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/internal/threshold"
)

// Second is one second of a run: its metrics and the generator's health.
type Second struct {
	// Index numbers the second on the run's shared schedule: it ends at Options.Start plus
	// Index+1 seconds (the last one may end sooner), so the same second of several shards has
	// the same index and their snapshots merge.
	Index    int64
	Elapsed  time.Duration // since the schedule's start, at the end of this second
	Snapshot *metrics.Snapshot
	Health   Health
}

// Result is what a run measured.
type Result struct {
	Script string
	Model  script.Model
	// Start is when the schedule began (Options.Start, or when the run was started);
	// LateStart how much later this shard began to follow it.
	Start     time.Time
	LateStart time.Duration
	Elapsed   time.Duration
	Segment   Segment
	Requests  []string // request labels, in session order
	Groups    []string // group labels, in session order (metrics.Group keys in snapshots)
	// Checks are the assertions tallied, in session order (metrics.Check keys: their Label).
	Checks []script.Check
	Total  *metrics.Snapshot
	// Seconds is each second's health (their Snapshot is nil: Options.OnSecond receives it).
	Seconds []Second
	// Iterations counts iterations completed; Dropped the open model's iterations that found
	// no free VU; Interrupted those cut short at the end of the graceful stop.
	Iterations, Dropped, Interrupted int64
	// Scenarios are the scenarios of a script that has them, each with its iterations.
	Scenarios []ScenarioResult
	// Unsent counts requests never sent because a variable they use was not set (an earlier
	// extraction found nothing); their groups count as failed.
	Unsent int64
	// Hooks are the aliases of the url plugins whose hook time is recorded (metrics.Hook keys).
	Hooks []string
	// HookErrors counts failed hook calls by reason (a crashed plugin, a timeout, a refusal).
	HookErrors map[string]int64
	// ErrorSamples are the first distinct reasons of each request's failures, by class.
	ErrorSamples []metrics.ErrorSample
	// Exhausted says what ended the run early, if anything did: a source of values that ran
	// out, or a destination the agent's policy refuses.
	Exhausted string
	// Thresholds are judged on the run's own seconds when the engine was told to judge them (a
	// run of its own); a shard leaves them to whoever merges the shards.
	Thresholds []threshold.Result
	Verdict    Verdict
	// Stop says why load stopped: Completed, or why it was cut short.
	Stop Stop
}

// ScenarioResult is what a scenario of a script of scenarios did: its name and tags, its model,
// its request labels and its iterations.
type ScenarioResult struct {
	Name       string
	Tags       map[string]string
	Model      script.Model
	Requests   []string
	Iterations int64
}

// ErrThresholds is returned, wrapped, when a threshold of a run failed; its Result is complete.
var ErrThresholds = errors.New("thresholds failed")

// ThresholdsErr is ErrThresholds wrapped with the first threshold that failed, or nil when every
// one judged held.
func (r *Result) ThresholdsErr() error {
	for _, t := range r.Thresholds {
		if !t.Passed {
			return fmt.Errorf("%w: %s", ErrThresholds, t.Threshold.Source)
		}
	}
	return nil
}
