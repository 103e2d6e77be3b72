package httpapi

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/control/runs"
	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/run"
)

// A second of the live stream lists its agents in the order of their shards' ids, whatever the
// order of the map they were merged into: two replicas, or one replica read again after a
// reconnection, send the same second byte for byte.
func TestALiveSecondListsItsAgentsInTheirShardsOrder(t *testing.T) {
	t.Parallel()
	sec := &runs.MergedSecond{Index: 3, Snapshot: &metrics.Snapshot{Start: time.Unix(100, 0), Duration: time.Second},
		Shards: map[uuid.UUID]runs.ShardPart{}}
	for i := range 16 {
		sec.Shards[uuid.New()] = runs.ShardPart{Health: run.Health{ActiveVUs: int64(i + 1)}}
	}
	for range 20 {
		agents := toAPILiveSecond(sec, nil, nil).Agents
		require.Len(t, agents, 16)
		require.True(t, slices.IsSortedFunc(agents, func(a, b api.LiveAgent) int {
			return strings.Compare(a.ShardId.String(), b.ShardId.String())
		}), "%v", agents)
	}
}
