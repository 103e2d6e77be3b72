package postgres

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/postgres/dbsqlc"
)

// reportBatches store together the reports without an end that arrive together: every agent
// reports each second, and a thousand of them spent the server and its database most of their
// time on statements and commits, one per report. Batching is natural: a report that arrives
// while batches are being stored waits for the next, which takes every report waiting (up to
// maxReportBatch); at low load each report goes alone, at once.
type reportBatches struct {
	mu      sync.Mutex
	waiting []*batchedReport
	running int // batches being stored
}

// maxReportBatch bounds the reports of one statement: 64 reports of one second each are some
// 400 KB of snapshots.
const maxReportBatch = 64

// maxReportBatches bounds the batches stored at once: enough to keep a pool's connections busy
// without taking them all from the requests that are not reports.
const maxReportBatches = 4

type batchedReport struct {
	agentID, shardID uuid.UUID
	lease            int64
	secs             []barrage.ShardSecond
	jobsSince        time.Time

	rep  ShardReport
	ok   bool // stored; otherwise the report goes through ReportShard's transaction
	err  error
	done chan struct{}
}

// storeBatched stores r with the reports that arrive with it, and tells whether it was stored.
func (s *Store) storeBatched(ctx context.Context, r *batchedReport) (bool, error) {
	r.done = make(chan struct{})
	b := &s.batches
	b.mu.Lock()
	b.waiting = append(b.waiting, r)
	if b.running < maxReportBatches {
		b.running++
		go s.storeBatches()
	}
	b.mu.Unlock()
	select {
	case <-r.done:
		return r.ok, r.err
	case <-ctx.Done():
		// The batch may store it all the same: a report resent is stored once.
		return false, ctx.Err()
	}
}

// storeBatches stores the reports waiting, a batch after another, until none waits.
func (s *Store) storeBatches() {
	b := &s.batches
	for {
		b.mu.Lock()
		var batch []*batchedReport
		batch, b.waiting = takeBatch(b.waiting, (*batchedReport).shard, maxReportBatch)
		if len(batch) == 0 {
			b.running--
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		s.storeBatch(batch)
	}
}

// takeBatch takes the first of waiting, up to most (below 0: no bound), one of each shard (a
// report or an end resent while the first waits goes in the next batch), and answers them with
// those left waiting.
func takeBatch[T any](waiting []T, shard func(T) uuid.UUID, most int) (batch, rest []T) {
	shards := map[uuid.UUID]bool{}
	for _, r := range waiting {
		if len(batch) == most || shards[shard(r)] {
			rest = append(rest, r)
			continue
		}
		shards[shard(r)] = true
		batch = append(batch, r)
	}
	return batch, rest
}

func (r *batchedReport) shard() uuid.UUID { return r.shardID }

// storeBatch stores batch in one statement and tells each report its outcome. The statement
// runs on its own context: it serves reports of many requests, none of which may cancel it.
func (s *Store) storeBatch(batch []*batchedReport) {
	defer func() {
		for _, r := range batch {
			close(r.done)
		}
	}()
	arg := dbsqlc.ShardReportBatchParams{Channel: ChannelRuns, JobsSince: batch[0].jobsSince}
	for _, r := range batch {
		arg.Ids, arg.AgentIds, arg.Leases = append(arg.Ids, r.shardID), append(arg.AgentIds, r.agentID), append(arg.Leases, r.lease)
		if r.jobsSince.Before(arg.JobsSince) { // the oldest: a job found for no one is looked for, not handed
			arg.JobsSince = r.jobsSince
		}
		for _, sec := range r.secs {
			arg.SecShards, arg.Idxs = append(arg.SecShards, r.shardID), append(arg.Idxs, sec.Index)
			arg.Snapshots, arg.Healths, arg.Monitors = append(arg.Snapshots, sec.Snapshot), append(arg.Healths, sec.Health), append(arg.Monitors, sec.Monitors)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := s.q.ShardReportBatch(ctx, s.pool, arg)
	if err != nil {
		// Each report then goes through its own transaction, which stores it or says why not.
		s.log.Warn("a batch of reports failed; each goes alone", slog.Int("reports", len(batch)), slog.String("error", err.Error()))
		return
	}
	byShard := make(map[uuid.UUID]dbsqlc.ShardReportBatchRow, len(rows))
	for _, row := range rows {
		byShard[row.ShardID] = row
	}
	for _, r := range batch {
		row, ok := byShard[r.shardID]
		if !ok {
			continue
		}
		if row.NowRunning {
			row.Run.State = string(barrage.RunRunning)
		}
		r.rep = ShardReport{Stored: int(row.Stored), WorkWaiting: row.WorkWaiting}
		r.rep.Run, r.err = runFromRow(row.Run)
		r.ok = true
	}
}
