package httpapi

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control/fleet"
)

// agentPrincipal returns the agent making the request; the policy guarantees one on agent routes.
func agentPrincipal(ctx context.Context) (barrage.Agent, error) {
	p, ok := PrincipalFrom(ctx)
	if !ok || p.Agent == nil {
		return barrage.Agent{}, barrage.Errorf(barrage.ErrUnauthorized, "send the agent's token")
	}
	return *p.Agent, nil
}

func (s *server) AgentLease(ctx context.Context, req api.AgentLeaseRequestObject) (api.AgentLeaseResponseObject, error) {
	a, err := agentPrincipal(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	wait := fleet.MaxLeaseWait
	if b.WaitSeconds != nil {
		wait = time.Duration(*b.WaitSeconds) * time.Second
	}
	w, err := s.fleet.Lease(ctx, a, fleet.Hello{Protocol: b.Protocol, Version: b.Version, Cores: b.Cores, IP: ClientIP(ctx).String(),
		Sandbox: b.Sandbox != nil && *b.Sandbox}, wait)
	if err != nil {
		return nil, err
	}
	if w.Shard == nil && len(w.Pings) == 0 && len(w.Jobs) == 0 {
		return api.AgentLease204Response{}, nil
	}
	var out api.AgentLease200JSONResponse
	if w.Shard != nil {
		out.Shard = ptr(toAPIShardJob(w.Shard, time.Now()))
	}
	if len(w.Pings) > 0 {
		out.Pings = &w.Pings
	}
	out.Jobs = toAPIJobs(w.Jobs)
	return out, nil
}

func (s *server) AgentAnswerPing(ctx context.Context, req api.AgentAnswerPingRequestObject) (api.AgentAnswerPingResponseObject, error) {
	a, err := agentPrincipal(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.fleet.AnswerPing(ctx, a, req.Id); err != nil {
		return nil, err
	}
	return api.AgentAnswerPing204Response{}, nil
}

func (s *server) AgentReport(ctx context.Context, req api.AgentReportRequestObject) (api.AgentReportResponseObject, error) {
	a, err := agentPrincipal(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	rep := fleet.Report{Lease: b.Lease, Seconds: make([]fleet.Second, len(b.Seconds))}
	for i, sec := range b.Seconds {
		rep.Seconds[i] = fleet.Second{Index: sec.Index, Snapshot: sec.Snapshot, Health: sec.Health.Health()}
		if sec.Monitors != nil {
			m := &fleet.MonitorValues{Values: *sec.Monitors}
			if sec.MonitorUnits != nil {
				for _, u := range *sec.MonitorUnits {
					m.Units = append(m.Units, string(u))
				}
			}
			rep.Seconds[i].Monitors = m
		}
	}
	if e := b.End; e != nil {
		end := &fleet.ShardEnd{}
		if err := end.Stop.Reason.UnmarshalText([]byte(e.Reason)); err != nil {
			return nil, barrage.Invalid("end.reason", err.Error())
		}
		if e.Detail != nil {
			end.Stop.Detail = *e.Detail
		}
		if e.LateStartMs != nil {
			end.LateStart = time.Duration(*e.LateStartMs) * time.Millisecond
		}
		if e.Result != nil {
			if end.Result, err = json.Marshal(*e.Result); err != nil {
				return nil, err
			}
		}
		rep.End = end
	}
	in, err := s.fleet.Report(ctx, a, req.Id, rep)
	if err != nil {
		return nil, err
	}
	var out api.AgentReport200JSONResponse
	if len(in.Pings) > 0 {
		out.Pings = &in.Pings
	}
	out.Jobs = toAPIJobs(in.Jobs)
	if in.Stop != nil {
		out.Stop.Set(api.StopInstruction{Reason: api.StopReason(in.Stop.Reason.String()), Detail: in.Stop.Detail})
	} else {
		out.Stop.SetNull()
	}
	return out, nil
}

func toAPIShardJob(j *barrage.ShardJob, now time.Time) api.ShardJob {
	v := api.ShardJob{
		ShardId: j.Shard.ID, RunId: j.Run.ID, Lease: j.Shard.Lease, Load: api.LoadOf(j.Run.Load),
		Segment: fmt.Sprintf("%d:%d/%d", j.Shard.From, j.Shard.To, j.Shard.Of),
		Script: api.ScriptBundle{Name: j.Script.Name, Source: j.Script.Source, Sha256: hex.EncodeToString(j.Script.SHA256),
			Files: make([]api.BundleFile, len(j.Script.Files)), Plugins: api.PinsOf(j.Script.Manifest.Plugins)},
	}
	if j.Run.StartAt != nil {
		v.StartAt = *j.Run.StartAt
		v.StartsInMs = j.Run.StartAt.Sub(now).Milliseconds()
	}
	v.MaxVus, v.MaxRunDurationSeconds = apiJobLimits(j.Run.Limits)
	if j.Run.Destinations != nil {
		v.Destinations = ptr(j.Run.Destinations)
	}
	if len(j.Run.Manifest.Env) > 0 {
		v.Env = ptr(api.RunEnv(j.Run.Manifest.Env))
	}
	if len(j.Secrets) > 0 {
		v.Secrets = &j.Secrets
	}
	for i, f := range j.Script.Files {
		v.Script.Files[i] = api.BundleFile{Name: f.Name, Content: f.Content}
	}
	return v
}

// toAPIJobs is the jobs handed to an agent; nil when there are none.
func toAPIJobs(jobs []barrage.AgentJob) *[]api.AgentJob {
	if len(jobs) == 0 {
		return nil
	}
	out := make([]api.AgentJob, len(jobs))
	for i, j := range jobs {
		b := j.Bundle
		out[i] = api.AgentJob{Id: j.ID, Kind: api.AgentJobKind(j.Kind), Test: api.TestBundle{
			Name: b.Name, Format: api.TestBundleFormat(b.Format), Source: b.Source, Files: make([]api.BundleFile, len(b.Files)),
		}}
		if len(j.Secrets) > 0 {
			out[i].Secrets = ptr(j.Secrets)
		}
		if j.Destinations != nil {
			out[i].Destinations = ptr(j.Destinations)
		}
		if len(j.Plugins) > 0 {
			out[i].Plugins = ptr(api.PinsOf(j.Plugins))
		}
		for k, f := range b.Files {
			out[i].Test.Files[k] = api.BundleFile{Name: f.Name, Content: f.Content}
		}
	}
	return &out
}
