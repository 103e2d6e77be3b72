package api

import (
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/barrage-load/barrage/internal/run"
)

// The run's vocabulary on the wire and back, each conversion beside its inverse: the agent
// writes what the server reads, the server writes what the CLI reads.

// HealthOf is h as an agent reports it.
func HealthOf(h run.Health) EngineHealth {
	return EngineHealth{
		Cpu: h.CPU, Cores: h.Cores, LatenessMaxNs: int64(h.LatenessMax), LatenessSumNs: int64(h.LatenessSum),
		Scheduled: h.Scheduled, Late: h.Late, Dropped: h.Dropped, ActiveVus: h.ActiveVUs,
		BusyNs: ptr(int64(h.BusyTime)), TargetNs: ptr(int64(h.TargetTime)),
	}
}

// Health is h as the agent measured it. Busy and target time count only when both came (an
// agent older than them sends neither).
func (h EngineHealth) Health() run.Health {
	out := run.Health{
		CPU: h.Cpu, Cores: h.Cores, LatenessMax: time.Duration(h.LatenessMaxNs), LatenessSum: time.Duration(h.LatenessSumNs),
		Scheduled: h.Scheduled, Late: h.Late, Dropped: h.Dropped, ActiveVUs: h.ActiveVus,
	}
	if h.BusyNs != nil && h.TargetNs != nil {
		out.BusyTime, out.TargetTime = time.Duration(*h.BusyNs), time.Duration(*h.TargetNs)
	}
	return out
}

// TraceEntryOf is ev as a debug answer carries it: text without NUL bytes (which the server's
// store refuses), bodies and variables shown by preview (which may shorten them).
func TraceEntryOf(ev run.TraceEvent, preview func([]byte) string) TraceEntry {
	show := func(b []byte) *string { return ptr(clean(preview(b))) }
	e := TraceEntry{Request: ev.Request, Method: ev.Method, Url: clean(ev.URL), BytesIn: ev.BytesIn,
		DurationMs: float64(ev.Duration) / float64(time.Millisecond), Vars: map[string]string{}, Failures: ev.Failures,
		RequestHeaders: make([]Header, len(ev.RequestHeader)), ResponseHeaders: []Header{}}
	for k, v := range ev.Vars {
		e.Vars[k] = *show([]byte(v))
	}
	if e.Failures == nil {
		e.Failures = []string{}
	}
	for i, h := range ev.RequestHeader {
		e.RequestHeaders[i] = Header{Name: clean(h[0]), Value: clean(h[1])}
	}
	if len(ev.RequestBody) > 0 {
		e.RequestBody = show(ev.RequestBody)
	}
	for _, r := range ev.Redirects {
		e.Redirects = ptr(append(deref(e.Redirects), TraceRedirect{Status: r.Status, Method: r.Method, Url: clean(r.URL)}))
	}
	if ev.Status != 0 { // a body that did not decode came with its status
		e.Status = ptr(ev.Status)
	}
	if ev.Err != nil {
		e.Error = ptr(clean(ev.Err.Error()))
		return e
	}
	if ev.Encoding != "" {
		e.ContentEncoding, e.DecodedBytes, e.DecodedPastCap = ptr(clean(ev.Encoding)), ptr(ev.Decoded), ptr(ev.DecodedPart)
	}
	for _, k := range slices.Sorted(maps.Keys(ev.ResponseHeader)) {
		for _, v := range ev.ResponseHeader[k] {
			e.ResponseHeaders = append(e.ResponseHeaders, Header{Name: clean(k), Value: clean(v)})
		}
	}
	if len(ev.ResponseBody) > 0 {
		e.ResponseBody = show(ev.ResponseBody)
	}
	return e
}

// Event is e as the engine traced it (its bodies as previewed), so that an agent's trace prints
// as a local one does.
func (e TraceEntry) Event() run.TraceEvent {
	ev := run.TraceEvent{Request: e.Request, Method: e.Method, URL: e.Url, BytesIn: e.BytesIn,
		Duration: time.Duration(e.DurationMs * float64(time.Millisecond)), Vars: e.Vars, Failures: e.Failures,
		ResponseHeader: http.Header{}}
	for _, h := range e.RequestHeaders {
		ev.RequestHeader = append(ev.RequestHeader, [2]string{h.Name, h.Value})
	}
	for _, h := range e.ResponseHeaders {
		ev.ResponseHeader[h.Name] = append(ev.ResponseHeader[h.Name], h.Value)
	}
	if e.RequestBody != nil {
		ev.RequestBody = []byte(*e.RequestBody)
	}
	if e.ResponseBody != nil {
		ev.ResponseBody = []byte(*e.ResponseBody)
	}
	if e.Status != nil {
		ev.Status = *e.Status
	}
	if e.Error != nil {
		ev.Err = errors.New(*e.Error)
	}
	for _, h := range deref(e.Redirects) {
		ev.Redirects = append(ev.Redirects, run.Redirect{Status: h.Status, Method: h.Method, URL: h.Url})
	}
	if e.ContentEncoding != nil {
		ev.Encoding = *e.ContentEncoding
		ev.Decoded, ev.DecodedPart = deref(e.DecodedBytes), deref(e.DecodedPastCap)
	}
	return ev
}

// ShardResultOf is a as an agent reports it when its shard ends. The account's JSON is the
// wire's, field for field (a test holds it), so it goes across as JSON.
func ShardResultOf(a run.Account) (*ShardResult, error) {
	b, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	var r ShardResult
	return &r, json.Unmarshal(b, &r)
}

// clean replaces NUL bytes, which JSON carries but PostgreSQL's jsonb refuses.
func clean(s string) string { return strings.ReplaceAll(s, "\x00", "\uFFFD") }
