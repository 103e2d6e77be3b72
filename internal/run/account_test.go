package run_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/monitor"
	"github.com/barrage-load/barrage/internal/run"
)

// A run's account is its shards' added up: counts summed, hook errors by reason, samples merged.
func TestAccountsAddUpARunsShards(t *testing.T) {
	a := run.AccountOf(&run.Result{Iterations: 10, Dropped: 1, Unsent: 2, HookErrors: map[string]int64{"timeout": 3, "crashed": 1},
		ErrorSamples: []metrics.ErrorSample{{Label: "get", Class: "connect", Message: "refused", Count: 2}}})
	require.Equal(t, []run.HookErrors{{Reason: "crashed", Count: 1}, {Reason: "timeout", Count: 3}}, a.HookErrors, "in the order of their reasons")
	b := run.Account{Iterations: 5, Interrupted: 1, Exhausted: "users.csv", HookErrors: []run.HookErrors{{Reason: "timeout", Count: 2}},
		ErrorSamples:    []metrics.ErrorSample{{Label: "get", Class: "connect", Message: "refused", Count: 1}},
		MonitorFailures: []monitor.Failure{{Monitor: "db", Failed: 1}}}

	sum := run.Accounts([]run.Account{a, b})
	require.EqualValues(t, 15, sum.Iterations)
	require.EqualValues(t, 1, sum.Dropped)
	require.EqualValues(t, 1, sum.Interrupted)
	require.EqualValues(t, 2, sum.Unsent)
	require.Equal(t, "users.csv", sum.Exhausted)
	require.Equal(t, map[string]int64{"crashed": 1, "timeout": 5}, sum.HookErrorCounts())
	require.Equal(t, []metrics.ErrorSample{{Label: "get", Class: "connect", Message: "refused", Count: 3}}, sum.ErrorSamples)
	require.Len(t, sum.MonitorFailures, 1)

	require.Nil(t, run.Accounts(nil).HookErrorCounts(), "no shard, no failed call")
}
