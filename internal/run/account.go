package run

import (
	"cmp"
	"encoding/json"
	"maps"
	"slices"

	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/monitor"
)

// Account is a shard's own account of its load beyond its seconds: what an agent reports when
// the shard ends (the JSON of api.ShardResult, field for field), what the server stores and
// reads back, and what a local run tells of itself. Add sums a run's shards.
type Account struct {
	// Iterations counts iterations completed; Dropped the open model's iterations that found
	// no free VU; Interrupted those cut short at the end of the graceful stop; Unsent the
	// requests never sent because a variable they use was not set.
	Iterations  int64 `json:"iterations"`
	Dropped     int64 `json:"dropped"`
	Interrupted int64 `json:"interrupted"`
	Unsent      int64 `json:"unsent"`
	// Exhausted says which source of values ran out, if one did.
	Exhausted string `json:"exhausted,omitempty"`
	// HookErrors are failed plugin hook calls, by reason, in the order of their reasons.
	HookErrors []HookErrors `json:"hook_errors,omitempty"`
	// ErrorSamples are the first distinct reasons of each request's failures, by class.
	ErrorSamples []metrics.ErrorSample `json:"error_samples,omitempty"`
	// MonitorFailures are the script's monitors whose scrapes failed.
	MonitorFailures []monitor.Failure `json:"monitor_failures,omitempty"`
	// SweepLevels are a sweep's levels as the agent measured them (package sweep reads them).
	SweepLevels json.RawMessage `json:"sweep_levels,omitempty"`
}

// HookErrors counts the failed calls of plugin hooks for one reason.
type HookErrors struct {
	Reason string `json:"reason"`
	Count  int64  `json:"count"`
}

// AccountOf is the account of a run's (or a shard's) result.
func AccountOf(r *Result) Account {
	a := Account{Iterations: r.Iterations, Dropped: r.Dropped, Interrupted: r.Interrupted, Unsent: r.Unsent,
		Exhausted: r.Exhausted, ErrorSamples: r.ErrorSamples}
	for _, reason := range slices.Sorted(maps.Keys(r.HookErrors)) {
		a.HookErrors = append(a.HookErrors, HookErrors{Reason: reason, Count: r.HookErrors[reason]})
	}
	return a
}

// ReadAccount reads a shard's account as the server stored it from its agent's report.
func ReadAccount(stored []byte) (Account, error) {
	var a Account
	err := json.Unmarshal(stored, &a)
	return a, err
}

// HookErrorCounts are the account's failed hook calls by reason; nil when there were none.
func (a Account) HookErrorCounts() map[string]int64 {
	var out map[string]int64
	for _, h := range a.HookErrors {
		if out == nil {
			out = map[string]int64{}
		}
		out[h.Reason] += h.Count
	}
	return out
}

// Accounts sums the accounts of a run's shards into the run's: counts added, hook errors added
// by reason, error samples merged (the first few messages of each request and class), monitor
// failures and sweep levels of whichever shard reported them, the first source that ran out.
func Accounts(all []Account) Account {
	var sum Account
	var samples metrics.ErrorSamples
	hooks := map[string]int64{}
	for _, a := range all {
		sum.Iterations += a.Iterations
		sum.Dropped += a.Dropped
		sum.Interrupted += a.Interrupted
		sum.Unsent += a.Unsent
		sum.Exhausted = cmp.Or(sum.Exhausted, a.Exhausted)
		for _, h := range a.HookErrors {
			hooks[h.Reason] += h.Count
		}
		samples.Merge(a.ErrorSamples)
		sum.MonitorFailures = append(sum.MonitorFailures, a.MonitorFailures...)
		if len(sum.SweepLevels) == 0 {
			sum.SweepLevels = a.SweepLevels
		}
	}
	for _, reason := range slices.Sorted(maps.Keys(hooks)) {
		sum.HookErrors = append(sum.HookErrors, HookErrors{Reason: reason, Count: hooks[reason]})
	}
	sum.ErrorSamples = samples.List()
	return sum
}
