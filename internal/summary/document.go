package summary

import (
	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
)

// Document is a run's account on the server once it has ended, as it is stored and as
// `GET /v1/runs/{id}/summary` serves it (api.RunSummary reads every field of it): per request,
// group and hook, figures from the exact merge of every agent's histograms; the thresholds judged
// on the merged seconds; and each agent's share and the verdict on it as a generator.
type Document struct {
	// State and Reason are how the run ended, which the summary leads with.
	State    barrage.RunState `json:"state"`
	Reason   string           `json:"reason"`
	ElapsedS float64          `json:"elapsed_s"`
	Seconds  int              `json:"seconds"`
	Summary
	Agents []AgentShare `json:"agents"`
	// Baseline is the run held against its test's baseline when it ended; nil when its test had
	// none, or the run did not finish.
	Baseline *BaselineComparison `json:"baseline,omitempty"`
}

// BaselineComparison is a run held against the baseline of its test.
type BaselineComparison struct {
	RunID uuid.UUID `json:"run_id"`
	Comparison
}

// AgentShare is one shard's part in a run.
type AgentShare struct {
	ShardID     uuid.UUID  `json:"shard_id"`
	AgentID     *uuid.UUID `json:"agent_id,omitempty"`
	State       string     `json:"state"`
	Reason      string     `json:"reason"`
	Requests    int64      `json:"requests"`
	Seconds     int        `json:"seconds"`
	LateStartMS int64      `json:"late_start_ms"`
	Verdict     Verdict    `json:"verdict"`
}
