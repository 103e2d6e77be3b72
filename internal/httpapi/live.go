package httpapi

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/oapi-codegen/nullable"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control/runs"
	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/monitor"
	"github.com/barrage-load/barrage/internal/summary"
)

// LiveStreams bounds the runs' live streams: each outlives its request and costs its replica a
// read of the run's seconds every second, so that one user holding thousands open would starve
// everyone else.
type LiveStreams struct {
	// PerUser is how many one user may have open on a replica at once; Total, everyone's.
	PerUser, Total int
	// Lifetime is the longest a stream lasts: then, or when the credential that opened it
	// expires, it ends, and its client reconnects with Last-Event-ID (with a credential that is
	// still good).
	Lifetime time.Duration
}

// DefaultLiveStreams: a user watches a few runs in a few tabs; a replica follows 2,000 streams
// at once, each a read of its database a second; a stream lasts 30 minutes.
var DefaultLiveStreams = LiveStreams{PerUser: 8, Total: 2000, Lifetime: 30 * time.Minute}

// liveLimits holds the bounds and the streams open.
type liveLimits struct {
	LiveStreams
	users *inflight
	total chan struct{}
}

func newLiveLimits(l LiveStreams) liveLimits {
	l.PerUser = cmp.Or(l.PerUser, DefaultLiveStreams.PerUser)
	l.Total = cmp.Or(l.Total, DefaultLiveStreams.Total)
	l.Lifetime = cmp.Or(l.Lifetime, DefaultLiveStreams.Lifetime)
	return liveLimits{LiveStreams: l, users: newInflight(l.PerUser, 1, 1, "live streams"), total: make(chan struct{}, l.Total)}
}

// open counts a stream of user's, or refuses it (429) past the user's bound or everyone's; it
// returns what closes it.
func (l liveLimits) open(ctx context.Context, user uuid.UUID) (func(), error) {
	leave, err := l.users.acquire(ctx, user, false)
	if err != nil {
		return nil, err
	}
	select {
	case l.total <- struct{}{}:
		return func() { <-l.total; leave() }, nil
	default:
		leave()
		return nil, &barrage.RateLimitError{RetryAfterSeconds: 5,
			Reason: fmt.Sprintf("this server follows %d live streams already, the most it follows at once: reconnect in a moment", l.Total)}
	}
}

func (s *server) GetRunLive(ctx context.Context, req api.GetRunLiveRequestObject) (api.GetRunLiveResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	// Refused before the stream begins: once it has, errors can no longer be problem documents.
	if _, err := s.runs.Run(ctx, p, req.Id); err != nil {
		return nil, err
	}
	after := int64(-1)
	if v := req.Params.LastEventID; v != nil {
		n, err := strconv.ParseInt(*v, 10, 64)
		if err != nil || n < -1 {
			return nil, &badParam{field: "Last-Event-ID", reason: "want the id of a second event"}
		}
		after = n
	}
	closeStream, err := s.live.open(ctx, p.User.ID)
	if err != nil {
		return nil, err
	}
	until := time.Now().Add(s.live.Lifetime)
	if !p.Expires.IsZero() && p.Expires.Before(until) {
		until = p.Expires
	}
	return liveStream{ctx: ctx, s: s, p: p, id: req.Id, after: after, until: until, close: closeStream}, nil
}

// liveStream writes a run's live events as Server-Sent Events while they come, until until.
type liveStream struct {
	ctx   context.Context
	s     *server
	p     barrage.Principal
	id    uuid.UUID
	after int64
	until time.Time
	close func() // what counts it among the streams open
}

// VisitGetRunLiveResponse streams the events, flushing each.
func (l liveStream) VisitGetRunLiveResponse(w http.ResponseWriter) error {
	defer l.close()
	ctx, cancel := context.WithDeadline(l.ctx, l.until)
	defer cancel()
	// A server shutting down ends its streams at once: their clients reconnect, to a replica
	// that stays, and miss nothing (Last-Event-ID).
	defer context.AfterFunc(l.s.draining, cancel)()
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
	w.WriteHeader(http.StatusOK)
	var start *time.Time
	write := func(event, id string, v any) error {
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		// A stream outlives the server's write timeout: each event gets its own.
		_ = rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
		var b strings.Builder
		if id != "" {
			b.WriteString("id: " + id + "\n")
		}
		b.WriteString("event: " + event + "\ndata: ")
		b.Write(data)
		b.WriteString("\n\n")
		if _, err := w.Write([]byte(b.String())); err != nil {
			return err
		}
		return rc.Flush()
	}
	err := l.s.runs.Live(ctx, l.p, l.id, l.after, func(ev runs.LiveEvent) error {
		if ev.Shard != nil {
			return write("shard", "", toAPIShard(*ev.Shard))
		}
		if ev.Run != nil {
			start = ev.Run.StartAt
			kind := "state"
			if ev.Run.EndedAt != nil {
				kind = "end"
			}
			return write(kind, "", toAPIRun(*ev.Run))
		}
		sec := toAPILiveSecond(ev.Second, start, ev.Monitors)
		if len(ev.Thresholds) > 0 {
			ts := make([]api.ThresholdResult, len(ev.Thresholds))
			for i, t := range ev.Thresholds {
				ts[i] = api.ThresholdResult{Check: t.Check, Observed: t.Observed, Passed: t.Passed, Abort: ptrIf(t.Abort),
					WorstWindow: ptrIf(t.Worst), Over: ptrIf(t.Over), Request: ptrIf(t.Request)}
			}
			sec.Thresholds = &ts
		}
		if st := ev.Stability; st != nil {
			sec.Stability = &api.Stability{Cv: st.CV, MeanRps: st.MeanRPS, FromS: st.FromS, ToS: st.ToS, Seconds: st.Seconds,
				Limit: st.Limit, Unstable: st.Unstable}
		}
		return write("second", strconv.FormatInt(ev.Second.Index, 10), sec)
	})
	switch {
	case l.ctx.Err() != nil: // the client went
	case l.s.draining.Err() != nil:
		return write("error", "", map[string]string{"detail": "this server is shutting down; reconnect with Last-Event-ID"})
	case ctx.Err() != nil:
		return write("error", "", map[string]string{"detail": "the stream's time is up (its credential expires, or it has lasted its most); reconnect with Last-Event-ID"})
	case err != nil:
		// Headers are gone: say it in the stream, and log it once.
		l.s.log.WarnContext(l.ctx, "live stream ended early", slog.String("error", err.Error()))
		return write("error", "", map[string]string{"detail": "the stream ended early; reconnect with Last-Event-ID"})
	}
	return nil
}

func toAPILiveSecond(sec *runs.MergedSecond, start *time.Time, monitors []string) api.LiveSecond {
	elapsed := time.Duration(sec.Index+1) * time.Second
	if start != nil {
		elapsed = sec.Snapshot.End().Sub(*start)
	}
	req := sec.Snapshot.Requests()
	live := summary.NewLive(req, sec.Snapshot.Duration, elapsed, 0, 0)
	out := api.LiveSecond{
		Index: sec.Index, ElapsedS: elapsed.Seconds(), DurationS: ptr(sec.Snapshot.Duration.Seconds()), Requests: live.Requests, Rps: live.RPS,
		P50Ms: summary.Millis(live.P50), P95Ms: summary.Millis(live.P95), P99Ms: summary.Millis(live.P99),
		Errors: summary.Errors(req),
	}
	var labels []api.LiveLabel
	for key, st := range sec.Snapshot.Labels {
		if key.Kind != metrics.Request {
			continue
		}
		l := summary.NewLive(st, sec.Snapshot.Duration, elapsed, 0, 0)
		labels = append(labels, api.LiveLabel{Name: key.Name, Requests: l.Requests, Rps: l.RPS, Errors: l.Failed,
			P50Ms: summary.Millis(l.P50), P95Ms: summary.Millis(l.P95), P99Ms: summary.Millis(l.P99)})
	}
	if len(labels) > 0 {
		slices.SortFunc(labels, func(a, b api.LiveLabel) int { return strings.Compare(a.Name, b.Name) })
		out.Labels = &labels
	}
	for id, part := range sec.Shards {
		out.ActiveVus += part.Health.ActiveVUs
		out.Agents = append(out.Agents, api.LiveAgent{
			ShardId: id, Cpu: part.Health.CPU, ActiveVus: part.Health.ActiveVUs, Late: part.Health.Late, Dropped: part.Health.Dropped,
		})
	}
	// In the shards' order, not the map's: a second reads the same wherever and whenever it is
	// read (from either replica, or again after a reconnection).
	slices.SortFunc(out.Agents, func(a, b api.LiveAgent) int { return strings.Compare(a.ShardId.String(), b.ShardId.String()) })
	if m := sec.Monitors; m != nil {
		list := make([]api.LiveMonitor, 0, len(monitors))
		for i, name := range monitors {
			lm := api.LiveMonitor{Series: name, Unit: api.LiveMonitorUnit(monitor.UnitValue)}
			if i < len(m.Units) && m.Units[i] != "" {
				lm.Unit = api.LiveMonitorUnit(m.Units[i])
			}
			if i < len(m.Values) && m.Values[i] != nil {
				lm.Value = nullable.NewNullableWithValue(*m.Values[i])
			}
			list = append(list, lm)
		}
		out.Monitors = &list
	}
	return out
}
