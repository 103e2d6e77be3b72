package httpapi

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control"
	"github.com/barrage-load/barrage/internal/engine"
	"github.com/barrage-load/barrage/internal/metrics"
)

func (s *server) CreateRun(ctx context.Context, req api.CreateRunRequestObject) (api.CreateRunResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	in := control.RunInput{TestID: b.TestId, IdempotencyKey: req.Params.IdempotencyKey}
	switch {
	case (b.ScriptId == nil) == (b.TestId == nil):
		return nil, barrage.Invalid("script_id", "give exactly one of script_id and test_id")
	case b.ScriptId != nil:
		in.ScriptID = *b.ScriptId
	}
	if b.Vus != nil {
		in.Load.VUs = *b.Vus
	}
	if b.DurationSeconds != nil {
		in.Load.Duration = time.Duration(*b.DurationSeconds) * time.Second
	}
	if b.Rate != nil {
		in.Load.Rate = *b.Rate
	}
	if b.AgentIds != nil {
		in.AgentIDs = *b.AgentIds
	}
	if b.Agents != nil {
		in.Agents = *b.Agents
	}
	run, err := s.control.CreateRun(ctx, p, in)
	if err != nil {
		return nil, err
	}
	return api.CreateRun201JSONResponse(toAPIRun(run)), nil
}

func (s *server) ListRuns(ctx context.Context, req api.ListRunsRequestObject) (api.ListRunsResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	before, limit, err := pageArgs(req.Params.Cursor, req.Params.Limit)
	if err != nil {
		return nil, err
	}
	page, err := s.control.Runs(ctx, p, before, limit)
	if err != nil {
		return nil, err
	}
	out := api.ListRuns200JSONResponse{Items: make([]api.Run, len(page.Items)), NextCursor: encodeCursor(page.Next)}
	for i, r := range page.Items {
		out.Items[i] = toAPIRun(r)
	}
	return out, nil
}

func (s *server) GetRun(ctx context.Context, req api.GetRunRequestObject) (api.GetRunResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	run, err := s.control.Run(ctx, p, req.Id)
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
	run, err := s.control.CancelRun(ctx, p, req.Id)
	if err != nil {
		return nil, err
	}
	return api.CancelRun200JSONResponse(toAPIRun(run)), nil
}

func (s *server) GetRunSummary(ctx context.Context, req api.GetRunSummaryRequestObject) (api.GetRunSummaryResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	doc, err := s.control.Summary(ctx, p, req.Id)
	if err != nil {
		return nil, err
	}
	var out api.RunSummary
	if err := json.Unmarshal(doc, &out); err != nil {
		return nil, fmt.Errorf("run %s: stored summary: %w", req.Id, err)
	}
	return api.GetRunSummary200JSONResponse(out), nil
}

func toAPIRun(r barrage.Run) api.Run {
	v := api.Run{
		Id: r.ID, ScriptId: r.ScriptID, State: api.RunState(r.State), Reason: r.Reason, Load: toAPILoad(r.Load),
		StartAt: r.StartAt, CreatedAt: r.CreatedAt, EndedAt: r.EndedAt, Shards: make([]api.Shard, len(r.Shards)),
	}
	v.MaxVus, v.MaxRunDurationSeconds = apiJobLimits(r.Limits)
	v.Manifest = api.RunManifest{ScriptSha256: r.Manifest.ScriptSHA256, ScriptName: r.Manifest.ScriptName,
		Files: []api.ScriptFileRef{}, Agents: []api.ManifestAgent{}}
	v.Manifest.Plugins = toAPIPins(r.Manifest.Plugins)
	for _, f := range r.Manifest.Files {
		v.Manifest.Files = append(v.Manifest.Files, api.ScriptFileRef{Name: f.Name, Sha256: f.SHA256, Size: f.Size})
	}
	for _, sh := range r.Shards {
		v.Manifest.Agents = append(v.Manifest.Agents, api.ManifestAgent{ShardId: sh.ID, AgentId: sh.AgentID, Version: sh.AgentVersion})
	}
	for i, sh := range r.Shards {
		v.Shards[i] = api.Shard{
			Id: sh.ID, AgentId: sh.AgentID, Segment: fmt.Sprintf("%d:%d/%d", sh.From, sh.To, sh.Of),
			State: api.ShardState(sh.State), Reason: sh.Reason, LeasedAt: sh.LeasedAt, EndedAt: sh.EndedAt,
			LateStartMs: ptr(sh.LateStart.Milliseconds()),
		}
		if sh.AgentVersion != "" {
			v.Shards[i].AgentVersion = ptr(sh.AgentVersion)
		}
	}
	return v
}

func toAPILoad(l barrage.LoadOverrides) api.LoadOverrides {
	var v api.LoadOverrides
	if l.VUs > 0 {
		v.Vus = ptr(l.VUs)
	}
	if l.Duration > 0 {
		v.DurationSeconds = ptr(int(l.Duration / time.Second))
	}
	if l.Rate > 0 {
		v.Rate = ptr(l.Rate)
	}
	return v
}

func (s *server) CreateScript(ctx context.Context, req api.CreateScriptRequestObject) (api.CreateScriptResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	in := control.ScriptInput{Source: []byte(b.Source)}
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
	sc, err := s.control.CreateScript(ctx, p, in)
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
	sc, err := s.control.Script(ctx, p, req.Id)
	if err != nil {
		return nil, err
	}
	return api.GetScript200JSONResponse(toAPIScript(sc)), nil
}

func toAPIScript(sc barrage.Script) api.Script {
	v := api.Script{Id: sc.ID, Name: sc.Name, Sha256: hex.EncodeToString(sc.SHA256), Source: string(sc.Source),
		CreatedAt: sc.Created, Files: make([]api.ScriptFileRef, len(sc.Manifest.Files)), Plugins: toAPIPins(sc.Manifest.Plugins),
		TestId: sc.Manifest.TestID}
	if sc.Manifest.TestRevision > 0 {
		v.TestRevision = ptr(sc.Manifest.TestRevision)
	}
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
	err = s.control.Series(ctx, p, req.Id, func(sec *control.MergedSecond) error {
		item := api.SeriesSecond{Index: sec.Index, Labels: []api.SeriesLabel{}}
		for _, name := range slices.Sorted(maps.Keys(sec.Snapshot.Labels)) {
			item.Labels = append(item.Labels, toAPISeriesLabel(name, sec.Snapshot.Labels[name]))
		}
		out.Seconds = append(out.Seconds, item)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func toAPISeriesLabel(label string, st *metrics.Stats) api.SeriesLabel {
	kind, name := api.Request, label
	if n, ok := strings.CutPrefix(label, engine.GroupPrefix); ok {
		kind, name = api.Group, n
	} else if n, ok := strings.CutPrefix(label, engine.HookPrefix); ok {
		kind, name = api.Hook, n
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	v := api.SeriesLabel{Name: name, Kind: kind, Count: st.Requests, Errors: map[string]int64{}, BytesIn: st.BytesIn, BytesOut: st.BytesOut,
		P50Ms: ms(st.Latency.Quantile(0.5)), P95Ms: ms(st.Latency.Quantile(0.95)), P99Ms: ms(st.Latency.Quantile(0.99)), MaxMs: ms(st.Latency.Max())}
	for c := metrics.ErrorClass(1); c < metrics.NumErrorClasses; c++ {
		v.Errors[c.String()] = st.Errors[c]
	}
	return v
}
