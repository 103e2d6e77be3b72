package httpapi

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/audit"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control/runs"
	"github.com/barrage-load/barrage/internal/control/tests"
	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/report"
	"github.com/barrage-load/barrage/internal/summary"
	"github.com/barrage-load/barrage/internal/sweep"
)

func (s *server) CreateRun(ctx context.Context, req api.CreateRunRequestObject) (api.CreateRunResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	in := runs.RunInput{TestID: b.TestId, IdempotencyKey: req.Params.IdempotencyKey}
	switch {
	case (b.ScriptId == nil) == (b.TestId == nil):
		return nil, barrage.Invalid("script_id", "give exactly one of script_id and test_id")
	case b.ScriptId != nil:
		in.ScriptID = *b.ScriptId
	}
	in.Load, err = api.LoadOverrides{Vus: b.Vus, DurationSeconds: b.DurationSeconds, Rate: b.Rate, Stages: b.Stages, Sweep: b.Sweep}.Overrides()
	if err != nil {
		return nil, err
	}
	if b.AgentIds != nil {
		in.AgentIDs = *b.AgentIds
	}
	if b.Agents != nil {
		in.Agents = *b.Agents
	}
	if b.Env != nil && len(*b.Env) > 0 {
		in.Env = *b.Env
	}
	run, err := s.runs.CreateRun(ctx, p, in)
	if err != nil {
		return nil, err
	}
	audit.Object(ctx, run.ID.String())
	audit.Detail(ctx, "script_id", run.ScriptID)
	if in.TestID != nil {
		audit.Detail(ctx, "test_id", *in.TestID)
	}
	return api.CreateRun201JSONResponse(toAPIRun(run)), nil
}

func (s *server) ListRuns(ctx context.Context, req api.ListRunsRequestObject) (api.ListRunsResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	f := barrage.RunFilter{Project: req.Params.Project, TestID: req.Params.TestId, Since: req.Params.Since, Until: req.Params.Until}
	if f.Since != nil && f.Until != nil && f.Since.After(*f.Until) {
		return nil, &badParam{field: "since", reason: "must not be after until"}
	}
	if sts := req.Params.State; sts != nil {
		for _, st := range *sts {
			f.States = append(f.States, barrage.RunState(st))
		}
	}
	items, next, err := listPage(req.Params.Cursor, req.Params.Limit, func(before *uuid.UUID, limit int) (barrage.Page[barrage.Run], error) {
		return s.runs.Runs(ctx, p, f, before, limit)
	}, toAPIRun)
	return api.ListRuns200JSONResponse{Items: items, NextCursor: next}, err
}

func (s *server) GetRun(ctx context.Context, req api.GetRunRequestObject) (api.GetRunResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	run, err := s.runs.Run(ctx, p, req.Id)
	if err != nil {
		return nil, err
	}
	return api.GetRun200JSONResponse(toAPIRun(run)), nil
}

func (s *server) CancelRun(ctx context.Context, req api.CancelRunRequestObject) (api.CancelRunResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	run, err := s.runs.CancelRun(ctx, p, req.Id)
	if err != nil {
		return nil, err
	}
	return api.CancelRun200JSONResponse(toAPIRun(run)), nil
}

func (s *server) CompareRuns(ctx context.Context, req api.CompareRunsRequestObject) (api.CompareRunsResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	q := req.Params
	tol := tolerances(q.MaxP50Regression, q.MaxP95Regression, q.MaxP99Regression, q.MaxRpsRegression, q.MaxErrorIncrease)
	c, err := s.runs.Compare(ctx, p, req.Id, q.Base, tol)
	if err != nil {
		return nil, err
	}
	var out api.RunComparison
	if err := convert(c, &out); err != nil {
		return nil, err
	}
	return api.CompareRuns200JSONResponse(out), nil
}

// tolerances are a comparison's tolerances from the query's percentages, the defaults where
// none is given.
func tolerances(p50, p95, p99, rps, errorRate *float64) summary.Tolerances {
	tol := summary.DefaultTolerances
	for _, q := range []struct {
		v   *float64
		set *float64
	}{{&tol.P50, p50}, {&tol.P95, p95}, {&tol.P99, p99}, {&tol.RPS, rps}, {&tol.ErrorRate, errorRate}} {
		if q.set != nil {
			*q.v = *q.set / 100
		}
	}
	return tol
}

func (s *server) GetRunReport(ctx context.Context, req api.GetRunReportRequestObject) (api.GetRunReportResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	q := req.Params
	tol := tolerances(q.MaxP50Regression, q.MaxP95Regression, q.MaxP99Regression, q.MaxRpsRegression, q.MaxErrorIncrease)
	rep, err := s.runs.RunReport(ctx, p, req.Id, q.Base, tol)
	if err != nil {
		return nil, err
	}
	rep.Version = s.version
	var page bytes.Buffer // written whole before the status, so a failure is a problem, not half a page
	if err := rep.Write(&page); err != nil {
		return nil, err
	}
	return reportPage{page: page.Bytes(), name: "run-" + req.Id.String() + ".html"}, nil
}

func (s *server) GetRunSweep(ctx context.Context, req api.GetRunSweepRequestObject) (api.GetRunSweepResponseObject, error) {
	res, err := s.runSweep(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	var out api.SweepResult
	if err := convert(res, &out); err != nil {
		return nil, err
	}
	return api.GetRunSweep200JSONResponse(out), nil
}

func (s *server) GetRunSweepCSV(ctx context.Context, req api.GetRunSweepCSVRequestObject) (api.GetRunSweepCSVResponseObject, error) {
	res, err := s.runSweep(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := res.WriteCSV(&b); err != nil {
		return nil, err
	}
	return api.GetRunSweepCSV200TextcsvResponse{Body: &b, ContentLength: int64(b.Len())}, nil
}

func (s *server) GetRunSweepReport(ctx context.Context, req api.GetRunSweepReportRequestObject) (api.GetRunSweepReportResponseObject, error) {
	res, err := s.runSweep(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	rep := report.SweepReport{Title: fmt.Sprintf("Sweep of %s, run %s", res.Script, req.Id), Sweep: res, Version: s.version, Generated: time.Now()}
	var page bytes.Buffer
	if err := rep.Write(&page); err != nil {
		return nil, barrage.Errorf(barrage.ErrConflict, "run %s: %v", req.Id, err)
	}
	return reportPage{page: page.Bytes(), name: "sweep-" + req.Id.String() + ".html"}, nil
}

func (s *server) runSweep(ctx context.Context, id uuid.UUID) (*sweep.Result, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	return s.runs.RunSweep(ctx, p, id)
}

// reportPage is a report as the API answers it: the page's own policy (its inline charts and
// data may run, nothing may be fetched), named for saving.
type reportPage struct {
	page []byte
	name string
}

func (r reportPage) VisitGetRunSweepReportResponse(w http.ResponseWriter) error {
	return r.VisitGetRunReportResponse(w)
}

// ServedReportPolicy is a report's policy when the server answers it: the page's own, in a
// sandbox. The report is served from the portal's origin and runs inline scripts; sandboxed, it
// is an origin of its own, so that were a report ever to run a script someone planted, that
// script could neither read the portal's pages nor call the API as the signed-in user.
const ServedReportPolicy = report.ContentSecurityPolicy + "; sandbox allow-scripts allow-modals allow-popups allow-downloads"

func (r reportPage) VisitGetRunReportResponse(w http.ResponseWriter) error {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", ServedReportPolicy)
	h.Set("Content-Disposition", fmt.Sprintf("inline; filename=%q", r.name))
	h.Set("Content-Length", strconv.Itoa(len(r.page)))
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(r.page)
	return err
}

func (s *server) GetRunSummaryCSV(ctx context.Context, req api.GetRunSummaryCSVRequestObject) (api.GetRunSummaryCSVResponseObject, error) {
	sum, err := runSummary[summary.Document](ctx, s.runs, req.Id)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := sum.WriteCSV(&b); err != nil {
		return nil, err
	}
	return api.GetRunSummaryCSV200TextcsvResponse{Body: &b, ContentLength: int64(b.Len())}, nil
}

func (s *server) GetRunSummary(ctx context.Context, req api.GetRunSummaryRequestObject) (api.GetRunSummaryResponseObject, error) {
	out, err := runSummary[api.RunSummary](ctx, s.runs, req.Id)
	if err != nil {
		return nil, err
	}
	return api.GetRunSummary200JSONResponse(out), nil
}

// runSummary reads the stored summary of the asker's run id as a T.
func runSummary[T any](ctx context.Context, c *runs.Service, id uuid.UUID) (T, error) {
	var out T
	p, err := principal(ctx)
	if err != nil {
		return out, err
	}
	doc, err := c.Summary(ctx, p, id)
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(doc, &out); err != nil {
		return out, fmt.Errorf("run %s: stored summary: %w", id, err)
	}
	return out, nil
}

// toAPIOutcome is a run's outcome in brief; nil before it has one.
func toAPIOutcome(o *barrage.RunOutcome) *api.RunOutcome {
	if o == nil {
		return nil
	}
	v := &api.RunOutcome{Requests: o.Requests, ErrorRate: o.ErrorRate, P95Ms: o.P95MS, ThresholdsFailed: o.ThresholdsFailed,
		GeneratorLimited: o.GeneratorLimited, Incomplete: o.Incomplete}
	if o.BaselineVerdict != "" {
		v.BaselineVerdict = ptr(api.RunOutcomeBaselineVerdict(o.BaselineVerdict))
	}
	return v
}

func toAPIRun(r barrage.Run) api.Run {
	v := api.Run{
		Id: r.ID, ProjectId: r.ProjectID, StartedBy: r.OwnerID, ScriptId: r.ScriptID, State: api.RunState(r.State), Reason: r.Reason, Load: api.LoadOf(r.Load),
		StartAt: r.StartAt, CreatedAt: r.CreatedAt, EndedAt: r.EndedAt, Shards: make([]api.Shard, len(r.Shards)),
	}
	v.MaxVus, v.MaxRunDurationSeconds = apiJobLimits(r.Limits)
	if r.VUs > 0 {
		v.Vus = ptr(r.VUs)
	}
	v.Outcome = toAPIOutcome(r.Outcome)
	v.Manifest = api.RunManifest{ScriptSha256: r.Manifest.ScriptSHA256, ScriptName: r.Manifest.ScriptName,
		TestId: r.Manifest.TestID, TestRevision: revision(r.Manifest.TestRevision), Files: []api.ScriptFileRef{}, Agents: []api.ManifestAgent{}}
	v.Manifest.Plugins = api.PinsOf(r.Manifest.Plugins)
	if len(r.Manifest.Warnings) > 0 {
		v.Manifest.Warnings = &r.Manifest.Warnings
	}
	if len(r.Manifest.Env) > 0 {
		v.Manifest.Env = ptr(api.RunEnv(r.Manifest.Env))
	}
	if len(r.Manifest.Secrets) > 0 {
		v.Manifest.Secrets = &r.Manifest.Secrets
	}
	for _, f := range r.Manifest.Files {
		v.Manifest.Files = append(v.Manifest.Files, api.ScriptFileRef{Name: f.Name, Sha256: f.SHA256, Size: f.Size})
	}
	for _, sh := range r.Shards {
		v.Manifest.Agents = append(v.Manifest.Agents, api.ManifestAgent{ShardId: sh.ID, AgentId: sh.AgentID, Version: sh.AgentVersion})
	}
	for i, sh := range r.Shards {
		v.Shards[i] = toAPIShard(sh)
	}
	return v
}

func toAPIShard(sh barrage.Shard) api.Shard {
	v := api.Shard{
		Id: sh.ID, AgentId: sh.AgentID, Segment: fmt.Sprintf("%d:%d/%d", sh.From, sh.To, sh.Of),
		State: api.ShardState(sh.State), Reason: sh.Reason, LeasedAt: sh.LeasedAt, EndedAt: sh.EndedAt,
		LateStartMs: ptr(sh.LateStart.Milliseconds()),
	}
	if sh.AgentVersion != "" {
		v.AgentVersion = ptr(sh.AgentVersion)
	}
	return v
}

func (s *server) CreateScript(ctx context.Context, req api.CreateScriptRequestObject) (api.CreateScriptResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	in := tests.ScriptInput{Source: []byte(b.Source), Project: req.Params.Project}
	if b.Name != nil {
		in.Name = *b.Name
	}
	if b.Files != nil {
		seen := map[string]bool{}
		for i, f := range *b.Files {
			if seen[f.Name] {
				return nil, barrage.Invalid(fmt.Sprintf("files[%d].name", i), "names a file twice")
			}
			seen[f.Name] = true
			in.Files = append(in.Files, barrage.ScriptFile{Name: f.Name, Content: f.Content})
		}
	}
	sc, err := s.tests.CreateScript(ctx, p, in)
	if err != nil {
		return nil, err
	}
	return api.CreateScript201JSONResponse(toAPIScript(sc)), nil
}

func (s *server) GetScript(ctx context.Context, req api.GetScriptRequestObject) (api.GetScriptResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	sc, err := s.tests.Script(ctx, p, req.Id)
	if err != nil {
		return nil, err
	}
	return api.GetScript200JSONResponse(toAPIScript(sc)), nil
}

// revision is a test's revision a script was generated from; nil for none (0).
func revision(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}

func toAPIScript(sc barrage.Script) api.Script {
	v := api.Script{Id: sc.ID, ProjectId: sc.ProjectID, Name: sc.Name, Sha256: hex.EncodeToString(sc.SHA256), Source: string(sc.Source),
		CreatedAt: sc.Created, Files: make([]api.ScriptFileRef, len(sc.Manifest.Files)), Plugins: api.PinsOf(sc.Manifest.Plugins),
		TestId: sc.Manifest.TestID, TestRevision: revision(sc.Manifest.TestRevision)}
	for i, f := range sc.Manifest.Files {
		v.Files[i] = api.ScriptFileRef{Name: f.Name, Sha256: f.SHA256, Size: f.Size}
	}
	return v
}

func (s *server) GetRunSeries(ctx context.Context, req api.GetRunSeriesRequestObject) (api.GetRunSeriesResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	out := api.GetRunSeries200JSONResponse{Seconds: []api.SeriesSecond{}}
	err = s.runs.Series(ctx, p, req.Id, func(sec *runs.MergedSecond) error {
		item := api.SeriesSecond{Index: sec.Index, Labels: []api.SeriesLabel{}}
		for _, k := range slices.SortedFunc(maps.Keys(sec.Snapshot.Labels), metrics.Key.Compare) {
			item.Labels = append(item.Labels, toAPISeriesLabel(k, sec.Snapshot.Labels[k]))
		}
		out.Seconds = append(out.Seconds, item)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *server) GetRunSeriesCSV(ctx context.Context, req api.GetRunSeriesCSVRequestObject) (api.GetRunSeriesCSVResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := s.runs.Run(ctx, p, req.Id); err != nil {
		return nil, err // before any byte: another user's run is a 404
	}
	// Streamed as the seconds are merged, a chunk at a time: a long run's series is not held.
	pr, pw := io.Pipe()
	go func() {
		csv := summary.NewSeriesCSV(pw)
		err := s.runs.Series(ctx, p, req.Id, func(sec *runs.MergedSecond) error {
			var cpu float64
			var vus int64
			for _, part := range sec.Shards {
				cpu, vus = max(cpu, part.Health.CPU), vus+part.Health.ActiveVUs
			}
			csv.Write(sec.Index, sec.Snapshot, cpu, vus)
			return nil
		})
		pw.CloseWithError(cmp.Or(err, csv.Flush()))
	}()
	return api.GetRunSeriesCSV200TextcsvResponse{Body: pr}, nil
}

func toAPISeriesLabel(k metrics.Key, st *metrics.Stats) api.SeriesLabel {
	l := summary.NewSeriesLabel(k, st)
	return api.SeriesLabel{Name: l.Name, Kind: api.SeriesLabelKind(l.Kind), Count: l.Count, Errors: l.Errors,
		BytesIn: l.BytesIn, BytesOut: l.BytesOut, P50Ms: l.P50MS, P95Ms: l.P95MS, P99Ms: l.P99MS, MaxMs: l.MaxMS}
}
