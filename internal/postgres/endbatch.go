package postgres

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/postgres/dbsqlc"
)

// shardEnds store together the ends of a run's shards that arrive together. A run's agents end
// at the same moment, and each end took the run's lock in turn in its own transaction, holding
// a connection while it waited: a hundred agents ending took the pool from every other report,
// and the live streams of other runs stood still for seconds. The ends waiting for a run go in
// one transaction, which takes the run's lock once (other replicas' ends take it in turn); a
// replica stores one such transaction at a time per run.
type shardEnds struct {
	mu sync.Mutex
	// runs holds, per run whose ends are being stored, the ends waiting for the next
	// transaction: a run is in it while one stores its ends.
	runs map[uuid.UUID][]*endingShard
}

type endingShard struct {
	agentID, shardID uuid.UUID
	lease            int64
	end              *barrage.ShardEnd

	rep  ShardReport
	ok   bool // ended; otherwise the end goes through ReportShard's transaction
	done chan struct{}
}

func (e *endingShard) shard() uuid.UUID { return e.shardID }

// endBatched ends e's shard of run runID with the ends of the run's shards that arrive with it,
// and tells whether it was ended.
func (s *Store) endBatched(ctx context.Context, runID uuid.UUID, e *endingShard) (bool, error) {
	e.done = make(chan struct{})
	b := &s.ends
	b.mu.Lock()
	if b.runs == nil {
		b.runs = map[uuid.UUID][]*endingShard{}
	}
	waiting, storing := b.runs[runID]
	b.runs[runID] = append(waiting, e)
	if !storing {
		go s.storeEnds(runID)
	}
	b.mu.Unlock()
	select {
	case <-e.done:
		return e.ok, nil
	case <-ctx.Done():
		// The transaction may end the shard all the same: an end resent is then refused as
		// the shard's having ended, which the agent takes as done.
		return false, ctx.Err()
	}
}

// storeEnds stores the ends waiting for run runID, a transaction after another (each takes one
// end of each shard), until none waits.
func (s *Store) storeEnds(runID uuid.UUID) {
	b := &s.ends
	for {
		b.mu.Lock()
		batch, rest := takeBatch(b.runs[runID], (*endingShard).shard, -1)
		if len(batch) == 0 {
			delete(b.runs, runID)
			b.mu.Unlock()
			return
		}
		b.runs[runID] = append([]*endingShard{}, rest...) // non-nil: still storing
		b.mu.Unlock()
		s.storeEndBatch(runID, batch)
	}
}

// storeEndBatch ends the shards of batch in one transaction under the run's lock, queueing the
// run's summary when they were its last (see UseFinalizer), and tells each end its outcome. It
// runs on its own context: it serves ends of many requests, none of which may cancel it.
func (s *Store) storeEndBatch(runID uuid.UUID, batch []*endingShard) {
	defer func() {
		for _, e := range batch {
			close(e.done)
		}
	}()
	arg := dbsqlc.ShardEndBatchParams{RunID: runID}
	for _, e := range batch {
		arg.Ids, arg.AgentIds, arg.Leases = append(arg.Ids, e.shardID), append(arg.AgentIds, e.agentID), append(arg.Leases, e.lease)
		arg.States, arg.Reasons = append(arg.States, string(e.end.State)), append(arg.Reasons, e.end.Reason)
		arg.LateStartMs, arg.Results = append(arg.LateStartMs, e.end.LateStart.Milliseconds()), append(arg.Results, e.end.Result)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ended []uuid.UUID
	var rep ShardReport
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := s.q.RunLockForEnds(ctx, tx, runID); err != nil {
			return err
		}
		var err error
		if ended, err = s.q.ShardEndBatch(ctx, tx, arg); err != nil || len(ended) == 0 {
			return err
		}
		row, err := s.q.RunGetByID(ctx, tx, runID)
		if err != nil {
			return err
		}
		if rep.Run, err = s.withShards(ctx, tx, row); err != nil {
			return err
		}
		if s.finalizer != nil && rep.Run.ShardsEnded() {
			if err := s.finalizer.Finalize(ctx, tx, runID); err != nil {
				return err
			}
			rep.Queued = true
		}
		return s.notify(ctx, tx, runID)
	})
	if err != nil {
		// Each end then goes through its own transaction, which stores it or says why not.
		s.log.Warn("a batch of shards' ends failed; each goes alone", slog.String("run_id", runID.String()),
			slog.Int("ends", len(batch)), slog.String("error", err.Error()))
		return
	}
	byShard := make(map[uuid.UUID]bool, len(ended))
	for _, id := range ended {
		byShard[id] = true
	}
	last := true // the last shard ended carries the run's end; the others leave it to that one
	for i := len(batch) - 1; i >= 0; i-- {
		e := batch[i]
		if !byShard[e.shardID] {
			continue
		}
		e.rep, e.ok = rep, true
		e.rep.Queued = rep.Queued || !last
		last = false
	}
}
