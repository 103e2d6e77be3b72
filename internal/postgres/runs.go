package postgres

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/postgres/dbsqlc"
)

// CreateScript stores an immutable script and its data files, held to q; created is false when
// the project has the same script already (source, name and manifest: test, revision, plugins,
// files by digest), which it returns instead. A file's content is kept once per owner, however
// many scripts hold it.
func (s *Store) CreateScript(ctx context.Context, sc barrage.Script, q Quota) (_ barrage.Script, created bool, err error) {
	manifest, err := json.Marshal(sc.Manifest)
	if err != nil {
		return barrage.Script{}, false, err
	}
	same, err := s.q.ScriptSame(ctx, s.pool, dbsqlc.ScriptSameParams{ProjectID: sc.ProjectID, Sha256: sc.SHA256, Name: sc.Name, Manifest: manifest})
	switch {
	case err == nil:
		sc, err := s.scriptWithFiles(ctx, s.pool, same)
		return sc, false, err
	case !errors.Is(err, pgx.ErrNoRows):
		return barrage.Script{}, false, err
	}
	err = s.inQuotaTx(ctx, q, func(tx pgx.Tx) error {
		row, err := s.q.ScriptInsert(ctx, tx, dbsqlc.ScriptInsertParams{
			ID: sc.ID, OwnerID: sc.OwnerID, ProjectID: sc.ProjectID, Name: sc.Name, Source: sc.Source, Sha256: sc.SHA256, Manifest: manifest,
		})
		if err != nil {
			return translate(err, "script")
		}
		sc.Created = row.CreatedAt
		for _, f := range sc.Files {
			sum := sha256.Sum256(f.Content)
			if err := s.q.FileContentInsert(ctx, tx, dbsqlc.FileContentInsertParams{OwnerID: sc.OwnerID, Sha256: sum[:], Content: f.Content}); err != nil {
				return translate(err, "script file")
			}
			if err := s.q.ScriptFileInsert(ctx, tx, dbsqlc.ScriptFileInsertParams{ScriptID: sc.ID, Name: f.Name, Sha256: sum[:]}); err != nil {
				return translate(err, "script file")
			}
		}
		return nil
	})
	return sc, err == nil, err
}

// Script reads script id of the projects given, with its files' content.
func (s *Store) Script(ctx context.Context, projects []uuid.UUID, id uuid.UUID) (barrage.Script, error) {
	row, err := s.q.ScriptGet(ctx, s.pool, dbsqlc.ScriptGetParams{ID: id, Projects: projects})
	if err != nil {
		return barrage.Script{}, translate(err, "script")
	}
	return s.scriptWithFiles(ctx, s.pool, row)
}

func (s *Store) scriptWithFiles(ctx context.Context, db dbsqlc.DBTX, row dbsqlc.Script) (barrage.Script, error) {
	sc := barrage.Script{ID: row.ID, OwnerID: row.OwnerID, ProjectID: row.ProjectID, Name: row.Name, Source: row.Source, SHA256: row.Sha256, Created: row.CreatedAt}
	if err := json.Unmarshal(row.Manifest, &sc.Manifest); err != nil {
		return barrage.Script{}, fmt.Errorf("script %s: manifest: %w", row.ID, err)
	}
	files, err := s.q.ScriptFileList(ctx, db, row.ID)
	if err != nil {
		return barrage.Script{}, err
	}
	for _, f := range files {
		sc.Files = append(sc.Files, barrage.ScriptFile{Name: f.Name, Content: f.Content, SHA256: f.Sha256})
	}
	return sc, nil
}

// destinationLoads returns, in tx, the VUs that the runs not ended aim at each of addresses
// (those at none are left out), after waiting for the other creations of runs aimed at proved
// addresses: a run stored in tx before this call counts in it, one stored after in the next.
func (s *Store) destinationLoads(ctx context.Context, tx pgx.Tx, addresses []string) (map[string]int64, error) {
	if err := s.q.DestinationLock(ctx, tx); err != nil {
		return nil, err
	}
	rows, err := s.q.DestinationLoads(ctx, tx, addresses)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		out[r.Address] = r.Vus
	}
	return out, nil
}

// RunChecks check a run about to be stored against what runs created at the same moment change,
// in the transaction that stores it, so that such runs are admitted one after the other. An
// error from either stores nothing.
type RunChecks struct {
	// Guard is given, under locks on the run's owner and agents, the count of the owner's runs
	// not ended, and which of the run's agents hold a shard not yet ended.
	Guard func(active int, busy []uuid.UUID) error
	// Loads, when set, is given the VUs that the runs not ended aim at each of the run's pinned
	// addresses (barrage.Run.PinnedAddresses), the run's own counted, under a lock that runs aimed at
	// proved addresses take in turn. It is not called for a run that pins none.
	Loads func(loads map[string]int64) error
}

// CreateRun stores a run, its facts (summary.Facts' JSON) and its shards in one transaction,
// after checks and with a run counted
// for each marketplace plugin version it pins (refused when one was revoked meanwhile), and tells
// the run's agents that work waits for them once it commits. With an idempotency key that the
// owner used before, it stores nothing and returns the earlier run, and created is false (see
// RunByIdempotencyKey).
func (s *Store) CreateRun(ctx context.Context, r barrage.Run, facts []byte, idem *barrage.Idempotency, checks RunChecks) (run barrage.Run, created bool, err error) {
	var key *string
	var request []byte
	if idem != nil {
		prev, err := s.RunByIdempotencyKey(ctx, r.OwnerID, *idem)
		if err == nil || !errors.Is(err, barrage.ErrNotFound) {
			return prev, false, err
		}
		key, request = &idem.Key, idem.Request
	}
	load, err := json.Marshal(r.Load)
	if err != nil {
		return barrage.Run{}, false, err
	}
	manifest, err := json.Marshal(r.Manifest)
	if err != nil {
		return barrage.Run{}, false, err
	}
	vus, secs := jobLimitParams(r.Limits)
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if checks.Guard != nil {
			if err := s.guardRun(ctx, tx, r, checks.Guard); err != nil {
				return err
			}
		}
		row, err := s.q.RunInsert(ctx, tx, dbsqlc.RunInsertParams{
			ID: r.ID, OwnerID: r.OwnerID, ProjectID: r.ProjectID, ScriptID: r.ScriptID, Manifest: manifest, State: string(r.State), Load: load,
			MaxVus: vus, MaxRunSeconds: secs, IdempotencyKey: key, RequestSha256: request, Destinations: r.Destinations,
			Vus: int32(r.VUs), DestAddresses: r.PinnedAddresses(),
		})
		if err != nil {
			return err
		}
		shards := r.Shards
		if run, err = runFromRow(row); err != nil {
			return err
		}
		if err := s.q.RunFactsSave(ctx, tx, dbsqlc.RunFactsSaveParams{RunID: r.ID, Facts: facts}); err != nil {
			return err
		}
		for _, sh := range shards {
			if err := s.q.ShardInsert(ctx, tx, dbsqlc.ShardInsertParams{
				ID: sh.ID, RunID: r.ID, AgentID: sh.AgentID, SegFrom: int32(sh.From), SegTo: int32(sh.To), SegOf: int32(sh.Of),
			}); err != nil {
				return translate(err, "shard")
			}
			sh.RunID, sh.State = r.ID, barrage.ShardPending
			run.Shards = append(run.Shards, sh)
		}
		if addrs := r.PinnedAddresses(); checks.Loads != nil && len(addrs) > 0 {
			loads, err := s.destinationLoads(ctx, tx, addrs)
			if err != nil {
				return err
			}
			if err := checks.Loads(loads); err != nil {
				return err
			}
		}
		if err := s.countPluginRuns(ctx, tx, r.Manifest.Plugins); err != nil {
			return err
		}
		return s.notifyWork(ctx, tx, r.ShardAgents())
	})
	if idem != nil && errors.Is(translate(err, "run"), barrage.ErrConflict) {
		// The same key raced us and won: answer with its run.
		prev, err := s.RunByIdempotencyKey(ctx, r.OwnerID, *idem)
		return prev, false, err
	}
	if err != nil {
		return barrage.Run{}, false, translate(err, "run")
	}
	return run, true, nil
}

// guardRun locks r's owner and agents, and has guard check r against their state.
func (s *Store) guardRun(ctx context.Context, tx pgx.Tx, r barrage.Run, guard func(active int, busy []uuid.UUID) error) error {
	if _, err := s.q.UserGetByIDForUpdate(ctx, tx, r.OwnerID); err != nil {
		return translate(err, "user")
	}
	ids := r.ShardAgents()
	if _, err := s.q.AgentLockForRun(ctx, tx, ids); err != nil {
		return err
	}
	active, err := s.q.RunCountActive(ctx, tx, r.OwnerID)
	if err != nil {
		return err
	}
	busy, err := s.q.AgentsBusy(ctx, tx, ids)
	if err != nil {
		return err
	}
	return guard(int(active), busy)
}

// RunByIdempotencyKey reads the owner's run created with idem's key. The key used before for
// another request is an ErrInvalid naming the Idempotency-Key.
func (s *Store) RunByIdempotencyKey(ctx context.Context, ownerID uuid.UUID, idem barrage.Idempotency) (barrage.Run, error) {
	row, err := s.q.RunGetByIdempotencyKey(ctx, s.pool, dbsqlc.RunGetByIdempotencyKeyParams{OwnerID: ownerID, IdempotencyKey: &idem.Key})
	if err != nil {
		return barrage.Run{}, translate(err, "run")
	}
	if row.RequestSha256 != nil && !bytes.Equal(row.RequestSha256, idem.Request) {
		return barrage.Run{}, barrage.Invalid("Idempotency-Key",
			fmt.Sprintf("was used for another request, which created run %s: a new request needs a new key", row.ID))
	}
	return s.withShards(ctx, s.pool, row)
}

// Run reads run id of the projects given, with its shards; any other run is not found.
func (s *Store) Run(ctx context.Context, projects []uuid.UUID, id uuid.UUID) (barrage.Run, error) {
	row, err := s.q.RunGet(ctx, s.pool, dbsqlc.RunGetParams{ID: id, Projects: projects})
	if err != nil {
		return barrage.Run{}, translate(err, "run")
	}
	return s.withShards(ctx, s.pool, row)
}

// RunSummary reads the summary of run id of the projects given: nil while the run goes on.
func (s *Store) RunSummary(ctx context.Context, projects []uuid.UUID, id uuid.UUID) ([]byte, error) {
	sum, err := s.q.RunGetSummary(ctx, s.pool, dbsqlc.RunGetSummaryParams{ID: id, Projects: projects})
	return sum, translate(err, "run")
}

// RunFacts are what run id's script made of it when it was created (summary.Facts' JSON), or
// ErrNotFound for a run made before runs kept them. The caller has checked the run is in reach.
func (s *Store) RunFacts(ctx context.Context, id uuid.UUID) ([]byte, error) {
	facts, err := s.q.RunFactsGet(ctx, s.pool, id)
	return facts, translate(err, "run facts")
}

// SaveRunFacts stores what run id's script makes of it, for a run made before runs kept them or
// whose facts no longer read, in place of what was stored.
func (s *Store) SaveRunFacts(ctx context.Context, id uuid.UUID, facts []byte) error {
	return s.q.RunFactsSave(ctx, s.pool, dbsqlc.RunFactsSaveParams{RunID: id, Facts: facts})
}

// Runs lists the runs of the projects given with their shards, newest first, before the given id.
func (s *Store) Runs(ctx context.Context, projects []uuid.UUID, f barrage.RunFilter, before *uuid.UUID, limit int) ([]barrage.Run, error) {
	params := dbsqlc.RunListParams{Projects: projects, Before: before, MaxRows: int32(limit), TestID: f.TestID, Since: f.Since, Until: f.Until}
	for _, st := range f.States {
		params.States = append(params.States, string(st))
	}
	rows, err := s.q.RunList(ctx, s.pool, params)
	if err != nil {
		return nil, translate(err, "runs")
	}
	out := make([]barrage.Run, len(rows))
	ids := make([]uuid.UUID, len(rows))
	at := make(map[uuid.UUID]int, len(rows))
	for i, r := range rows {
		if out[i], err = runFromRow(r); err != nil {
			return nil, err
		}
		ids[i], at[r.ID] = r.ID, i
	}
	shards, err := s.q.ShardListByRuns(ctx, s.pool, ids)
	if err != nil {
		return nil, err
	}
	for _, sh := range shards {
		r := &out[at[sh.RunID]]
		r.Shards = append(r.Shards, shardFromRow(sh))
	}
	return out, nil
}

// OpenRuns lists the runs that have not ended, with their shards.
func (s *Store) OpenRuns(ctx context.Context) ([]barrage.Run, error) {
	rows, err := s.q.RunListOpen(ctx, s.pool)
	if err != nil {
		return nil, err
	}
	out := make([]barrage.Run, len(rows))
	for i, r := range rows {
		if out[i], err = s.withShards(ctx, s.pool, r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ActiveRuns counts the owner's runs that have not ended.
func (s *Store) ActiveRuns(ctx context.Context, ownerID uuid.UUID) (int, error) {
	n, err := s.q.RunCountActive(ctx, s.pool, ownerID)
	return int(n), err
}

// StopRun asks a run that has not ended to stop, in state (canceled or aborted_threshold) for
// reason, and tells the run's followers. stopped is false when it had ended or been stopped
// already.
func (s *Store) StopRun(ctx context.Context, id uuid.UUID, state barrage.RunState, reason string) (stopped bool, err error) {
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		n, err := s.q.RunStop(ctx, tx, dbsqlc.RunStopParams{ID: id, StopState: ptr(string(state)), StopReason: &reason})
		if err != nil || n == 0 {
			return err
		}
		stopped = true
		return s.notify(ctx, tx, id)
	})
	return stopped, err
}

// LeaseShard gives the agent its oldest pending shard, if any, under a new fencing token, with
// its run and script. The first shard leased sets the run's start: lead from now, so that the
// run's other agents, which wait on the same queue, can lease theirs before it.
func (s *Store) LeaseShard(ctx context.Context, agentID uuid.UUID, version string, lead time.Duration) (*barrage.ShardJob, error) {
	var job *barrage.ShardJob
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		row, err := s.q.ShardLease(ctx, tx, dbsqlc.ShardLeaseParams{AgentID: &agentID, AgentVersion: version})
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := s.q.RunSetStart(ctx, tx, dbsqlc.RunSetStartParams{ID: row.RunID, StartAt: ptr(time.Now().Add(lead))}); err != nil {
			return err
		}
		runRow, err := s.q.RunGetByID(ctx, tx, row.RunID)
		if err != nil {
			return err
		}
		scRow, err := s.q.ScriptGetForShard(ctx, tx, dbsqlc.ScriptGetForShardParams{ShardID: row.ID, AgentID: &agentID})
		if err != nil {
			return err
		}
		job = &barrage.ShardJob{Shard: shardFromRow(row)}
		if job.Run, err = runFromRow(runRow); err != nil {
			return err
		}
		if job.Script, err = s.scriptWithFiles(ctx, tx, scRow); err != nil {
			return err
		}
		return s.notify(ctx, tx, row.RunID)
	})
	if err != nil {
		return nil, fmt.Errorf("lease a shard: %w", err)
	}
	return job, nil
}

// ShardReport is what the store did with an agent's report, and the run it belongs to as it
// stands after (with its shards when the report ended the shard).
type ShardReport struct {
	Stored int // seconds stored; the others had been stored before
	Run    barrage.Run
	// WorkWaiting says whether the agent may have pings or jobs waiting: the caller looks for
	// them only then.
	WorkWaiting bool
	// Queued says whether the caller has nothing more to do for the run's end: the report ended
	// the run's last shard and queued the run's summary (see UseFinalizer), or ended its shard
	// with others of the run, one of whose reports carries the run's end.
	Queued bool
}

// Finalizer queues the summary of a run whose shards have all ended, in the transaction that
// ended the last (package jobs, on River), so that the summary is made once the end is stored
// and whatever becomes of the request that stored it.
type Finalizer interface {
	Finalize(ctx context.Context, tx pgx.Tx, run uuid.UUID) error
}

// UseFinalizer has the report that ends a run's last shard queue the run's summary with f.
// Without one, the caller summarizes the run itself. Set it before serving.
func (s *Store) UseFinalizer(f Finalizer) { s.finalizer = f }

// Notifier queues, in the transaction that stores what they follow from, the notifications of a
// run's end and the deliveries of notifications (package jobs, on River): an end stored is told,
// and a delivery stored is attempted, whatever becomes of the process that stored them.
type Notifier interface {
	RunEnded(ctx context.Context, tx pgx.Tx, run uuid.UUID) error
	Deliver(ctx context.Context, tx pgx.Tx, deliveries []uuid.UUID) error
	// Fire queues the run of schedule's firing due at dueAt, in the transaction that records
	// the firing and advances the schedule.
	Fire(ctx context.Context, tx pgx.Tx, schedule uuid.UUID, dueAt time.Time) error
}

// UseNotifier has a run's end and new deliveries queue their notifications with n. Without one,
// nothing is told. Set it before serving.
func (s *Store) UseNotifier(n Notifier) { s.notifier = n }

// ReportShard stores seconds of a shard the agent holds under lease, records the agent's
// heartbeat, and, with end, ends the shard, queueing the run's summary in the same transaction
// when it was the last shard (see UseFinalizer). A report under another lease (a stale
// holder's), or for a shard already ended (lost, say), is a conflict and stores nothing.
//
// A report is stored with those that arrive with it, in one statement (ShardReportBatch; see
// reportBatches), and an end with the ends of the run's other shards (see shardEnds).
// jobsSince is the oldest job the agent may still be handed (see TakeAgentJobs).
func (s *Store) ReportShard(ctx context.Context, agentID, shardID uuid.UUID, lease int64, secs []barrage.ShardSecond, end *barrage.ShardEnd, jobsSince time.Time) (ShardReport, error) {
	r := &batchedReport{agentID: agentID, shardID: shardID, lease: lease, secs: secs, jobsSince: jobsSince}
	ok, err := s.storeBatched(ctx, r)
	switch {
	case err != nil:
		return ShardReport{}, err
	case ok && end == nil:
		return r.rep, nil
	case ok:
		// A shard's last seconds go with the others' (its followers see them at once), and its
		// end after them, with the ends of the run's other shards (see shardEnds).
		e := &endingShard{agentID: agentID, shardID: shardID, lease: lease, end: end}
		ended, err := s.endBatched(ctx, r.rep.Run.ID, e)
		if err != nil {
			return ShardReport{}, err
		}
		if ended {
			e.rep.Stored, e.rep.WorkWaiting = r.rep.Stored, r.rep.WorkWaiting
			return e.rep, nil
		}
		secs = nil
	}
	// Otherwise not this agent's, not under this lease, or ended (or a batch failed): the
	// transaction below stores it or says why not.
	rep := ShardReport{WorkWaiting: true, Stored: r.rep.Stored}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if end != nil {
			if _, err := s.q.RunLockForShardEnd(ctx, tx, dbsqlc.RunLockForShardEndParams{ShardID: shardID, AgentID: &agentID}); err != nil {
				return translate(err, "shard")
			}
		}
		row, err := s.q.ShardHeartbeat(ctx, tx, dbsqlc.ShardHeartbeatParams{ID: shardID, AgentID: &agentID})
		if err != nil {
			return translate(err, "shard")
		}
		switch {
		case row.Lease != lease:
			return barrage.Errorf(barrage.ErrConflict, "the shard's lease is %d, not %d: another holder has it", row.Lease, lease)
		case row.State != string(barrage.ShardRunning):
			return barrage.Errorf(barrage.ErrConflict, "the shard has ended (%s: %s)", row.State, row.Reason)
		}
		for _, sec := range secs {
			n, err := s.q.ShardSecondInsert(ctx, tx, dbsqlc.ShardSecondInsertParams{
				ShardID: shardID, Idx: sec.Index, Snapshot: sec.Snapshot, Health: sec.Health, Monitors: sec.Monitors,
			})
			if err != nil {
				return translate(err, "second")
			}
			rep.Stored += int(n)
		}
		if err := s.q.AgentTouch(ctx, tx, agentID); err != nil {
			return err
		}
		if rep.Stored > 0 {
			if err := s.q.RunSetRunning(ctx, tx, row.RunID); err != nil {
				return err
			}
		}
		if end != nil {
			if err := s.q.ShardEnd(ctx, tx, dbsqlc.ShardEndParams{
				ID: shardID, State: string(end.State), Reason: end.Reason,
				LateStartMs: end.LateStart.Milliseconds(), Result: end.Result,
			}); err != nil {
				return translate(err, "shard")
			}
		}
		runRow, err := s.q.RunGetByID(ctx, tx, row.RunID)
		if err != nil {
			return err
		}
		if end == nil && rep.Stored == 0 {
			rep.Run, err = runFromRow(runRow) // a heartbeat: nothing for followers to see
			return err
		}
		// The shards only when one ended: the caller then sees whether the run is over.
		if end != nil {
			if rep.Run, err = s.withShards(ctx, tx, runRow); err == nil && s.finalizer != nil && rep.Run.ShardsEnded() {
				rep.Queued, err = true, s.finalizer.Finalize(ctx, tx, rep.Run.ID)
			}
		} else {
			rep.Run, err = runFromRow(runRow)
		}
		if err != nil {
			return err
		}
		return s.notify(ctx, tx, row.RunID)
	})
	return rep, err
}

// LoseSilentShards ends every running shard whose agent has not reported since before, as lost
// with reason, and returns the runs they belong to.
func (s *Store) LoseSilentShards(ctx context.Context, before time.Time, reason string) ([]uuid.UUID, error) {
	var runs []uuid.UUID
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := s.q.ShardListLost(ctx, tx, &before)
		if err != nil {
			return err
		}
		seen := map[uuid.UUID]bool{}
		for _, r := range rows {
			if err := s.q.ShardEnd(ctx, tx, dbsqlc.ShardEndParams{ID: r.ID, State: string(barrage.ShardLost), Reason: reason}); err != nil {
				return err
			}
			if !seen[r.RunID] {
				seen[r.RunID] = true
				runs = append(runs, r.RunID)
			}
		}
		return nil
	})
	return runs, err
}

// EndPendingShards ends the run's shards that no agent has taken, in state with reason.
func (s *Store) EndPendingShards(ctx context.Context, runID uuid.UUID, state barrage.ShardState, reason string) error {
	return s.q.ShardEndPending(ctx, s.pool, dbsqlc.ShardEndPendingParams{RunID: runID, State: string(state), Reason: reason})
}

// EndOpenShards ends the run's shards still pending or running, in state with reason.
func (s *Store) EndOpenShards(ctx context.Context, runID uuid.UUID, state barrage.ShardState, reason string) error {
	return s.q.ShardEndAll(ctx, s.pool, dbsqlc.ShardEndAllParams{RunID: runID, State: string(state), Reason: reason})
}

// RunSeconds reads the seconds the run's shards reported with an index in [from, to), ordered by
// index.
func (s *Store) RunSeconds(ctx context.Context, runID uuid.UUID, from, to int64) ([]barrage.ShardSecond, error) {
	rows, err := s.q.ShardSecondListByRun(ctx, s.pool, dbsqlc.ShardSecondListByRunParams{RunID: runID, FromIdx: from, ToIdx: to})
	return shardSeconds(rows), err
}

// NewRunSeconds reads the seconds the run's shards reported from index from on that a follower
// has not read, seen holding the newest second it read of each shard; ordered by index.
func (s *Store) NewRunSeconds(ctx context.Context, runID uuid.UUID, from int64, seen map[uuid.UUID]int64) ([]barrage.ShardSecond, error) {
	arg := dbsqlc.ShardSecondListNewByRunParams{RunID: runID, FromIdx: from}
	for shard, idx := range seen {
		if idx >= from { // of the others, every second from on is new
			arg.SeenShards, arg.SeenIdx = append(arg.SeenShards, shard), append(arg.SeenIdx, idx)
		}
	}
	rows, err := s.q.ShardSecondListNewByRun(ctx, s.pool, arg)
	return shardSeconds(rows), err
}

func shardSeconds(rows []dbsqlc.ShardSecond) []barrage.ShardSecond {
	out := make([]barrage.ShardSecond, len(rows))
	for i, r := range rows {
		out[i] = barrage.ShardSecond{ShardID: r.ShardID, Index: r.Idx, Snapshot: r.Snapshot, Health: r.Health, Monitors: r.Monitors}
	}
	return out
}

// ShardAccounts reads each shard's own account of run runID and its agent's name, in segment
// order. The caller has checked that the run is the reader's.
func (s *Store) ShardAccounts(ctx context.Context, runID uuid.UUID) ([]barrage.ShardAccount, error) {
	rows, err := s.q.ShardAccountsByRun(ctx, s.pool, runID)
	if err != nil {
		return nil, err
	}
	out := make([]barrage.ShardAccount, len(rows))
	for i, r := range rows {
		out[i] = barrage.ShardAccount{ShardID: r.ID, Result: r.Result}
		if r.AgentName != nil {
			out[i].AgentName = *r.AgentName
		}
	}
	return out, nil
}

// EndRun records the run's end and summary, once: ended is false when it had ended already.
func (s *Store) EndRun(ctx context.Context, id uuid.UUID, state barrage.RunState, reason string, summary []byte) (ended bool, err error) {
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		n, err := s.q.RunEnd(ctx, tx, dbsqlc.RunEndParams{ID: id, State: string(state), Reason: reason, Summary: summary})
		if err != nil || n == 0 {
			return err
		}
		ended = true
		if s.notifier != nil {
			if err := s.notifier.RunEnded(ctx, tx, id); err != nil {
				return err
			}
		}
		return s.notify(ctx, tx, id)
	})
	return ended, err
}

// The channels of PostgreSQL notifications: a run changed or a ping was answered (its id), work
// was queued for an agent (its id).
const (
	ChannelRuns = "barrage_runs"
	ChannelWork = "barrage_work"
)

// notify tells every replica's waiters on id (a run's followers, or the asker of a job or a
// ping) that it changed, when tx commits.
func (s *Store) notify(ctx context.Context, tx pgx.Tx, id uuid.UUID) error {
	return s.q.RunNotify(ctx, tx, dbsqlc.RunNotifyParams{Channel: ChannelRuns, Payload: id.String()})
}

// notifyWork tells every replica that work was queued for the agents, when tx commits, so that
// their waiting lease requests look at once.
func (s *Store) notifyWork(ctx context.Context, tx pgx.Tx, agents []uuid.UUID) error {
	for _, a := range agents {
		if err := s.q.RunNotify(ctx, tx, dbsqlc.RunNotifyParams{Channel: ChannelWork, Payload: a.String()}); err != nil {
			return err
		}
	}
	return nil
}

// RunForAgent reads a run with its shards by id alone, for the control plane's own work.
func (s *Store) RunForAgent(ctx context.Context, id uuid.UUID) (barrage.Run, error) {
	row, err := s.q.RunGetByID(ctx, s.pool, id)
	if err != nil {
		return barrage.Run{}, translate(err, "run")
	}
	return s.withShards(ctx, s.pool, row)
}

func (s *Store) withShards(ctx context.Context, db dbsqlc.DBTX, row dbsqlc.Run) (barrage.Run, error) {
	r, err := runFromRow(row)
	if err != nil {
		return r, err
	}
	shards, err := s.q.ShardListByRun(ctx, db, row.ID)
	if err != nil {
		return r, err
	}
	for _, sh := range shards {
		r.Shards = append(r.Shards, shardFromRow(sh))
	}
	return r, nil
}

func runFromRow(row dbsqlc.Run) (barrage.Run, error) {
	r := barrage.Run{
		ID: row.ID, OwnerID: row.OwnerID, ProjectID: row.ProjectID, ScriptID: row.ScriptID, State: barrage.RunState(row.State), Reason: row.Reason,
		Limits: limitsFromRow(row.MaxVus, row.MaxRunSeconds, nil), StartAt: row.StartAt, CreatedAt: row.CreatedAt,
		EndedAt: row.EndedAt, Destinations: row.Destinations, VUs: int(row.Vus),
	}
	if row.StopState != nil {
		r.Stop = &barrage.RunStop{State: barrage.RunState(*row.StopState), Reason: deref(row.StopReason)}
	}
	if err := json.Unmarshal(row.Load, &r.Load); err != nil {
		return r, fmt.Errorf("run %s: load: %w", row.ID, err)
	}
	if err := json.Unmarshal(row.Manifest, &r.Manifest); err != nil {
		return r, fmt.Errorf("run %s: manifest: %w", row.ID, err)
	}
	if len(row.Summary) > 0 {
		var err error
		if r.Outcome, err = outcomeOf(row.Summary); err != nil {
			return r, fmt.Errorf("run %s: summary: %w", row.ID, err)
		}
	}
	return r, nil
}

// outcomeOf reads the brief of a run's summary: the few fields it needs (the histograms and
// tables are skipped, not decoded).
func outcomeOf(summary []byte) (*barrage.RunOutcome, error) {
	var sum struct {
		Total struct {
			Count     int64   `json:"count"`
			ErrorRate float64 `json:"error_rate"`
			P95MS     float64 `json:"p95_ms"`
		} `json:"total"`
		Thresholds []struct {
			Passed bool `json:"passed"`
		} `json:"thresholds"`
		Verdict struct {
			GeneratorLimited bool `json:"generator_limited"`
		} `json:"verdict"`
		Incomplete json.RawMessage `json:"incomplete"`
		Baseline   *struct {
			Verdict string `json:"verdict"`
		} `json:"baseline"`
	}
	if err := json.Unmarshal(summary, &sum); err != nil {
		return nil, err
	}
	o := &barrage.RunOutcome{Requests: sum.Total.Count, ErrorRate: sum.Total.ErrorRate, P95MS: sum.Total.P95MS,
		GeneratorLimited: sum.Verdict.GeneratorLimited, Incomplete: len(sum.Incomplete) > 0 && string(sum.Incomplete) != "null"}
	if sum.Baseline != nil {
		o.BaselineVerdict = sum.Baseline.Verdict
	}
	for _, t := range sum.Thresholds {
		if !t.Passed {
			o.ThresholdsFailed++
		}
	}
	return o, nil
}

func shardFromRow(row dbsqlc.Shard) barrage.Shard {
	return barrage.Shard{
		ID: row.ID, RunID: row.RunID, AgentID: row.AgentID, From: int(row.SegFrom), To: int(row.SegTo), Of: int(row.SegOf),
		State: barrage.ShardState(row.State), Reason: row.Reason, Lease: row.Lease, AgentVersion: row.AgentVersion,
		LeasedAt: row.LeasedAt, HeartbeatAt: row.HeartbeatAt, EndedAt: row.EndedAt,
		LateStart: time.Duration(row.LateStartMs) * time.Millisecond,
	}
}

// RunsByState counts the runs in each state.
func (s *Store) RunsByState(ctx context.Context) (map[string]int64, error) {
	rows, err := s.q.RunCountByState(ctx, s.pool)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		out[r.State] = r.N
	}
	return out, nil
}

// AgentsOnline counts the enabled agents seen within barrage.AgentOnlineWithin.
func (s *Store) AgentsOnline(ctx context.Context) (int64, error) {
	since := time.Now().Add(-barrage.AgentOnlineWithin)
	return s.q.AgentCountSeenSince(ctx, s.pool, &since)
}
