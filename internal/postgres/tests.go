package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/postgres/dbsqlc"
)

// CreateTest stores a new test with its first revision.
func (s *Store) CreateTest(ctx context.Context, t barrage.Test, rev barrage.TestRevision, q Quota) (barrage.Test, error) {
	err := s.inQuotaTx(ctx, q, func(tx pgx.Tx) error {
		row, err := s.q.TestInsert(ctx, tx, dbsqlc.TestInsertParams{ID: t.ID, OwnerID: t.OwnerID, ProjectID: t.ProjectID, Name: t.Name})
		if err != nil {
			return translate(err, "test")
		}
		t = testFromRow(row)
		return s.insertRevision(ctx, tx, t.ID, 1, rev)
	})
	return t, err
}

func (s *Store) insertRevision(ctx context.Context, tx pgx.Tx, testID uuid.UUID, n int, rev barrage.TestRevision) error {
	sum := sha256.Sum256(rev.Source)
	_, err := s.q.TestRevisionInsert(ctx, tx, dbsqlc.TestRevisionInsertParams{
		TestID: testID, Revision: int32(n), Format: string(rev.Format), Source: rev.Source, Sha256: sum[:],
	})
	return translate(err, "test revision")
}

// SaveTest stores rev as a test of the projects given's next revision, and renames the test when name is
// given. Saves of one test are numbered one after the other.
func (s *Store) SaveTest(ctx context.Context, projects []uuid.UUID, id uuid.UUID, name *string, rev barrage.TestRevision, q Quota) (barrage.Test, error) {
	var t barrage.Test
	err := s.inQuotaTx(ctx, q, func(tx pgx.Tx) error {
		row, err := s.q.TestGetForUpdate(ctx, tx, dbsqlc.TestGetForUpdateParams{ID: id, Projects: projects})
		if err != nil {
			return translate(err, "test")
		}
		next := int(row.LatestRevision) + 1
		if err := s.insertRevision(ctx, tx, id, next, rev); err != nil {
			return err
		}
		params := dbsqlc.TestUpdateParams{ID: id, Name: row.Name, LatestRevision: int32(next)}
		if name != nil {
			params.Name = *name
		}
		row, err = s.q.TestUpdate(ctx, tx, params)
		if err != nil {
			return translate(err, "test")
		}
		t = testFromRow(row)
		return nil
	})
	if err != nil {
		return barrage.Test{}, err
	}
	return s.withFiles(ctx, t)
}

// Test reads a test of the projects given id, with its files listed and its last run.
func (s *Store) Test(ctx context.Context, projects []uuid.UUID, id uuid.UUID) (barrage.Test, error) {
	row, err := s.q.TestGet(ctx, s.pool, dbsqlc.TestGetParams{ID: id, Projects: projects})
	if err != nil {
		return barrage.Test{}, translate(err, "test")
	}
	t, err := s.withFiles(ctx, testFromRow(row))
	if err != nil {
		return barrage.Test{}, err
	}
	tests := []barrage.Test{t}
	if err := s.withLastRuns(ctx, projects, tests); err != nil {
		return barrage.Test{}, err
	}
	return tests[0], nil
}

// withLastRuns sets the last run of each of a test of the projects givens given, read for all at once.
func (s *Store) withLastRuns(ctx context.Context, projects []uuid.UUID, tests []barrage.Test) error {
	ids := make([]uuid.UUID, len(tests))
	at := make(map[uuid.UUID]int, len(tests))
	for i, t := range tests {
		ids[i], at[t.ID] = t.ID, i
	}
	rows, err := s.q.TestLastRuns(ctx, s.pool, dbsqlc.TestLastRunsParams{TestIds: ids, Projects: projects})
	if err != nil {
		return err
	}
	for _, r := range rows {
		last := &barrage.TestLastRun{ID: r.ID, State: barrage.RunState(r.State), CreatedAt: r.CreatedAt, EndedAt: r.EndedAt}
		if len(r.Outcome) > 0 {
			if last.Outcome, err = outcomeOf(r.Outcome); err != nil {
				return fmt.Errorf("run %s: summary: %w", r.ID, err)
			}
		}
		tests[at[r.TestID]].LastRun = last
	}
	return nil
}

func (s *Store) withFiles(ctx context.Context, t barrage.Test) (barrage.Test, error) {
	rows, err := s.q.TestFileList(ctx, s.pool, t.ID)
	if err != nil {
		return barrage.Test{}, err
	}
	t.Files = make([]barrage.TestFile, len(rows))
	for i, f := range rows {
		t.Files[i] = barrage.TestFile{Name: f.Name, SHA256: f.Sha256, Size: f.Size, UpdatedAt: f.UpdatedAt}
	}
	return t, nil
}

// Tests lists a test of the projects givens, newest first, before the id given, each with its last run.
func (s *Store) Tests(ctx context.Context, projects []uuid.UUID, before *uuid.UUID, limit int) ([]barrage.Test, error) {
	rows, err := s.q.TestList(ctx, s.pool, dbsqlc.TestListParams{Projects: projects, Before: before, MaxRows: int32(limit)})
	if err != nil {
		return nil, err
	}
	out := make([]barrage.Test, len(rows))
	for i, r := range rows {
		if out[i], err = s.withFiles(ctx, testFromRow(r)); err != nil {
			return nil, err
		}
	}
	if err := s.withLastRuns(ctx, projects, out); err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteTest removes a test of the projects given with its revisions and files. Scripts generated from it
// stay, and so do the runs that executed them.
func (s *Store) DeleteTest(ctx context.Context, projects []uuid.UUID, id uuid.UUID) error {
	n, err := s.q.TestDelete(ctx, s.pool, dbsqlc.TestDeleteParams{ID: id, Projects: projects})
	if err == nil && n == 0 {
		return barrage.Errorf(barrage.ErrNotFound, "test not found")
	}
	return err
}

// TestRevision reads revision n of a test of the projects given id (0: the latest), with its source.
func (s *Store) TestRevision(ctx context.Context, projects []uuid.UUID, id uuid.UUID, n int) (barrage.TestRevision, error) {
	t, err := s.q.TestGet(ctx, s.pool, dbsqlc.TestGetParams{ID: id, Projects: projects})
	if err != nil {
		return barrage.TestRevision{}, translate(err, "test")
	}
	if n == 0 {
		n = int(t.LatestRevision)
	}
	return s.revision(ctx, s.pool, id, n)
}

func (s *Store) revision(ctx context.Context, db dbsqlc.DBTX, id uuid.UUID, n int) (barrage.TestRevision, error) {
	row, err := s.q.TestRevisionGet(ctx, db, dbsqlc.TestRevisionGetParams{TestID: id, Revision: int32(n)})
	if err != nil {
		return barrage.TestRevision{}, translate(err, "test revision")
	}
	return barrage.TestRevision{TestID: row.TestID, Revision: int(row.Revision), Format: barrage.SourceFormat(row.Format),
		Source: row.Source, SHA256: row.Sha256, Size: int64(len(row.Source)), CreatedAt: row.CreatedAt}, nil
}

// TestRevisions lists the revisions of a test of the projects given id, newest first, without their source.
func (s *Store) TestRevisions(ctx context.Context, projects []uuid.UUID, id uuid.UUID) ([]barrage.TestRevision, error) {
	if _, err := s.q.TestGet(ctx, s.pool, dbsqlc.TestGetParams{ID: id, Projects: projects}); err != nil {
		return nil, translate(err, "test")
	}
	rows, err := s.q.TestRevisionList(ctx, s.pool, id)
	if err != nil {
		return nil, err
	}
	out := make([]barrage.TestRevision, len(rows))
	for i, r := range rows {
		out[i] = barrage.TestRevision{TestID: r.TestID, Revision: int(r.Revision), Format: barrage.SourceFormat(r.Format),
			SHA256: r.Sha256, Size: r.Size, CreatedAt: r.CreatedAt}
	}
	return out, nil
}

// PutTestFile stores a data file of a test of the projects given, replacing one of the same name; created
// says whether it is new. A new file past maxFiles of the test is refused; the test is locked
// meanwhile, so that uploads at once count one after the other. The change is held to q.
func (s *Store) PutTestFile(ctx context.Context, projects []uuid.UUID, id uuid.UUID, name string, content []byte, maxFiles int, q Quota) (f barrage.TestFile, created bool, err error) {
	err = s.inQuotaTx(ctx, q, func(tx pgx.Tx) error {
		if _, err := s.q.TestGetForUpdate(ctx, tx, dbsqlc.TestGetForUpdateParams{ID: id, Projects: projects}); err != nil {
			return translate(err, "test")
		}
		sum := sha256.Sum256(content)
		row, err := s.q.TestFilePut(ctx, tx, dbsqlc.TestFilePutParams{TestID: id, Name: name, Content: content, Sha256: sum[:]})
		if err != nil {
			return translate(err, "file")
		}
		if n, err := s.q.TestFileCount(ctx, tx, id); err != nil || n > int64(maxFiles) {
			if err == nil {
				err = barrage.Invalid("name", fmt.Sprintf("a test has at most %d data files: delete one first", maxFiles))
			}
			return err
		}
		f, created = barrage.TestFile{Name: row.Name, SHA256: row.Sha256, Size: row.Size, UpdatedAt: row.UpdatedAt}, row.Created
		return nil
	})
	return f, created, err
}

// TestFile reads a data file of a test of the projects given, with its content.
func (s *Store) TestFile(ctx context.Context, projects []uuid.UUID, id uuid.UUID, name string) (barrage.TestFile, error) {
	if _, err := s.q.TestGet(ctx, s.pool, dbsqlc.TestGetParams{ID: id, Projects: projects}); err != nil {
		return barrage.TestFile{}, translate(err, "test")
	}
	row, err := s.q.TestFileGet(ctx, s.pool, dbsqlc.TestFileGetParams{TestID: id, Name: name})
	if err != nil {
		return barrage.TestFile{}, translate(err, "file")
	}
	return barrage.TestFile{Name: row.Name, Content: row.Content, SHA256: row.Sha256, Size: int64(len(row.Content)), UpdatedAt: row.UpdatedAt}, nil
}

// DeleteTestFile removes a data file of a test of the projects given.
func (s *Store) DeleteTestFile(ctx context.Context, projects []uuid.UUID, id uuid.UUID, name string) error {
	if _, err := s.q.TestGet(ctx, s.pool, dbsqlc.TestGetParams{ID: id, Projects: projects}); err != nil {
		return translate(err, "test")
	}
	n, err := s.q.TestFileDelete(ctx, s.pool, dbsqlc.TestFileDeleteParams{TestID: id, Name: name})
	if err == nil && n == 0 {
		return barrage.Errorf(barrage.ErrNotFound, "file not found")
	}
	return translate(err, "file")
}

// DataFiles names the data files a test's source reads; a bundle carries those alone.
type DataFiles func(source []byte) []string

// TestBundle reads revision n of a test of the projects given id (0: the latest) with the data files it
// reads, as an agent or a generation needs it.
func (s *Store) TestBundle(ctx context.Context, projects []uuid.UUID, id uuid.UUID, n int, files DataFiles) (barrage.TestBundle, int, error) {
	t, err := s.q.TestGet(ctx, s.pool, dbsqlc.TestGetParams{ID: id, Projects: projects})
	if err != nil {
		return barrage.TestBundle{}, 0, translate(err, "test")
	}
	if n == 0 {
		n = int(t.LatestRevision)
	}
	b, err := s.bundle(ctx, t, n, files)
	return b, n, err
}

func (s *Store) bundle(ctx context.Context, t dbsqlc.Test, n int, names DataFiles) (barrage.TestBundle, error) {
	rev, err := s.revision(ctx, s.pool, t.ID, n)
	if err != nil {
		return barrage.TestBundle{}, err
	}
	files, err := s.q.TestFileContents(ctx, s.pool, dbsqlc.TestFileContentsParams{TestID: t.ID, Names: names(rev.Source)})
	if err != nil {
		return barrage.TestBundle{}, err
	}
	b := barrage.TestBundle{ProjectID: t.ProjectID, Name: t.Name, Format: rev.Format, Source: rev.Source, Files: make([]barrage.ScriptFile, len(files))}
	for i, f := range files {
		b.Files[i] = barrage.ScriptFile{Name: f.Name, Content: f.Content, SHA256: f.Sha256}
	}
	return b, nil
}

func testFromRow(r dbsqlc.Test) barrage.Test {
	t := barrage.Test{ID: r.ID, OwnerID: r.OwnerID, ProjectID: r.ProjectID, Name: r.Name, LatestRevision: int(r.LatestRevision),
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if r.BaselineRunID != nil {
		t.Baseline = &barrage.TestBaseline{RunID: *r.BaselineRunID, Tolerances: r.BaselineTolerances}
	}
	return t
}

// SetTestBaseline sets the baseline of a test of the projects given (nil clears it) and returns
// the test.
func (s *Store) SetTestBaseline(ctx context.Context, projects []uuid.UUID, id uuid.UUID, b *barrage.TestBaseline) (barrage.Test, error) {
	arg := dbsqlc.TestSetBaselineParams{ID: id, Projects: projects}
	if b != nil {
		arg.RunID, arg.Tolerances = &b.RunID, b.Tolerances
	}
	row, err := s.q.TestSetBaseline(ctx, s.pool, arg)
	if err != nil {
		return barrage.Test{}, translate(err, "test")
	}
	return s.withFiles(ctx, testFromRow(row))
}

// TestBaselineOf reads the baseline of test id, whatever its project (the control plane's own
// work: the summary of a run of it); nil when it has none.
func (s *Store) TestBaselineOf(ctx context.Context, id uuid.UUID) (*barrage.TestBaseline, error) {
	row, err := s.q.TestBaselineOf(ctx, s.pool, id)
	if err != nil {
		return nil, translate(err, "test")
	}
	if row.BaselineRunID == nil {
		return nil, nil
	}
	return &barrage.TestBaseline{RunID: *row.BaselineRunID, Tolerances: row.BaselineTolerances}, nil
}

// TestTrend reads the newest limit ended runs of test id in the projects given, newest first.
func (s *Store) TestTrend(ctx context.Context, projects []uuid.UUID, id uuid.UUID, limit int) ([]barrage.TrendRun, error) {
	rows, err := s.q.TestTrend(ctx, s.pool, dbsqlc.TestTrendParams{Projects: projects, TestID: id, MaxRows: int32(limit)})
	if err != nil {
		return nil, err
	}
	out := make([]barrage.TrendRun, len(rows))
	for i, r := range rows {
		out[i] = barrage.TrendRun{ID: r.ID, State: barrage.RunState(r.State), CreatedAt: r.CreatedAt, EndedAt: r.EndedAt,
			Revision: int(r.Revision), Figures: r.Figures}
	}
	return out, nil
}

// CreateAgentJob queues a job for its agent and wakes the agent's waiting lease requests,
// unless its owner has maxOpen jobs created after since still unanswered: then the error is a
// *barrage.RateLimitError.
func (s *Store) CreateAgentJob(ctx context.Context, j barrage.AgentJob, maxOpen int, since time.Time) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		// Counted under the owner's lock, so that jobs asked for at once cannot pass the cap.
		if _, err := s.q.UserGetByIDForUpdate(ctx, tx, j.OwnerID); err != nil {
			return translate(err, "user")
		}
		open, err := s.q.AgentJobOpenCount(ctx, tx, dbsqlc.AgentJobOpenCountParams{OwnerID: j.OwnerID, Since: since})
		if err != nil {
			return err
		}
		if open >= int64(maxOpen) {
			return &barrage.RateLimitError{RetryAfterSeconds: 5,
				Reason: fmt.Sprintf("%d of your debug and generate jobs are waiting for an agent's answer, and %d may wait at once", open, maxOpen)}
		}
		plugins := j.Plugins
		if plugins == nil {
			plugins = []barrage.PluginPin{}
		}
		pins, err := json.Marshal(plugins)
		if err != nil {
			return err
		}
		if err := s.q.AgentJobInsert(ctx, tx, dbsqlc.AgentJobInsertParams{
			ID: j.ID, AgentID: j.AgentID, OwnerID: j.OwnerID, Kind: string(j.Kind), TestID: &j.TestID, Revision: int32(j.Revision),
			Plugins: pins,
		}); err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.ConstraintName == "agent_jobs_test_id_fkey" {
				return barrage.Errorf(barrage.ErrNotFound, "test not found: it was deleted")
			}
			return translate(err, "job")
		}
		return s.notifyWork(ctx, tx, []uuid.UUID{j.AgentID})
	})
}

// JobSlots bounds the jobs an agent is handed while it has others under way: Slots at once, of
// which PerOwner may be one owner's.
type JobSlots struct {
	Slots, PerOwner int
}

// testDeleted is the answer to a job whose test was deleted before its agent took it.
const testDeleted = "the test was deleted"

// TakeAgentJobs hands the agent the jobs waiting for it, created after since, that fit its free
// slots (a job handed over after since and not answered holds one), owners in turn; each with
// its test revision and the data files it reads. Jobs whose test was deleted are answered so.
func (s *Store) TakeAgentJobs(ctx context.Context, agentID uuid.UUID, since time.Time, slots JobSlots, files DataFiles) ([]barrage.AgentJob, error) {
	var rows []dbsqlc.AgentJob
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if err := s.q.AgentJobLock(ctx, tx, agentID.String()); err != nil {
			return err
		}
		orphans, err := s.q.AgentJobAnswerOrphans(ctx, tx, dbsqlc.AgentJobAnswerOrphansParams{AgentID: agentID, Reason: testDeleted})
		if err != nil {
			return err
		}
		for _, id := range orphans {
			if err := s.notify(ctx, tx, id); err != nil {
				return err
			}
		}
		ids, err := s.q.AgentJobNext(ctx, tx, dbsqlc.AgentJobNextParams{
			AgentID: agentID, Since: since, Slots: int64(slots.Slots), PerOwner: int64(slots.PerOwner)})
		if err != nil || len(ids) == 0 {
			return err
		}
		rows, err = s.q.AgentJobDeliver(ctx, tx, ids)
		return err
	})
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	out := make([]barrage.AgentJob, 0, len(rows))
	for _, r := range rows {
		j := agentJobFromRow(r)
		var t dbsqlc.Test
		if r.TestID != nil {
			t, err = s.q.TestGetForJob(ctx, s.pool, *r.TestID)
		}
		if r.TestID == nil || errors.Is(err, pgx.ErrNoRows) {
			// Deleted since it was taken: answered, so that it holds no slot.
			if err := s.AnswerAgentJob(ctx, agentID, r.ID, nil, ptr(testDeleted)); err != nil && !errors.Is(err, barrage.ErrNotFound) {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		b, err := s.bundle(ctx, t, j.Revision, files)
		if err != nil {
			return nil, err
		}
		j.Bundle = &b
		out = append(out, j)
	}
	return out, nil
}

// AnswerAgentJob records the agent's answer to its job and wakes whoever waits on it, and the
// agent, whose freed slot may take a waiting job. A job
// answered already, or never handed to this agent, is not found.
func (s *Store) AnswerAgentJob(ctx context.Context, agentID, id uuid.UUID, result []byte, errText *string) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := s.q.AgentJobAnswer(ctx, tx, dbsqlc.AgentJobAnswerParams{ID: id, AgentID: agentID, Result: result, Error: errText}); err != nil {
			return translate(err, "job")
		}
		if err := s.notify(ctx, tx, id); err != nil {
			return err
		}
		return s.notifyWork(ctx, tx, []uuid.UUID{agentID}) // a slot is free: jobs may wait for it
	})
}

// AgentJob reads a job by id, for the request that waits on it.
func (s *Store) AgentJob(ctx context.Context, id uuid.UUID) (barrage.AgentJob, error) {
	r, err := s.q.AgentJobGet(ctx, s.pool, id)
	if err != nil {
		return barrage.AgentJob{}, translate(err, "job")
	}
	return agentJobFromRow(r), nil
}

func agentJobFromRow(r dbsqlc.AgentJob) barrage.AgentJob {
	j := barrage.AgentJob{ID: r.ID, AgentID: r.AgentID, OwnerID: r.OwnerID, Kind: barrage.JobKind(r.Kind),
		Revision: int(r.Revision), Answered: r.AnsweredAt, Result: r.Result}
	if r.TestID != nil { // nil: the test was deleted
		j.TestID = *r.TestID
	}
	if r.Error != nil {
		j.Error = *r.Error
	}
	// Written by CreateAgentJob: a row that does not decode has no plugins to give.
	_ = json.Unmarshal(r.Plugins, &j.Plugins)
	return j
}
