package sdk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/barrage-load/barrage/sdk/proto/barrage/plugin/v1"
)

// The gRPC server adapters run in the plugin process and call the author's implementation.

type infoServer struct {
	pb.UnimplementedInfoServiceServer
	p *Plugin
}

func (s *infoServer) Describe(context.Context, *pb.DescribeRequest) (*pb.DescribeResponse, error) {
	return infoToProto(s.p.Info()), nil
}

type elementServer struct {
	pb.UnimplementedSessionElementServiceServer
	impl SessionElement
}

func (s *elementServer) Configure(ctx context.Context, req *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	vars, err := s.impl.Configure(ctx, []byte(req.GetConfigJson()))
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.ConfigureResponse{Variables: vars}, nil
}

func (s *elementServer) Next(ctx context.Context, req *pb.NextRequest) (*pb.NextResponse, error) {
	n := int(req.GetCount())
	if n <= 0 {
		return nil, status.Error(codes.InvalidArgument, "count must be positive")
	}
	sets, err := s.impl.Next(ctx, n)
	exhausted := errors.Is(err, ErrExhausted)
	if err != nil && !exhausted {
		return nil, toStatus(err)
	}
	if len(sets) > n {
		sets = sets[:n]
	}
	resp := &pb.NextResponse{Sets: make([]*pb.Values, len(sets)), Exhausted: exhausted}
	for i, v := range sets {
		resp.Sets[i] = &pb.Values{Vars: v}
	}
	return resp, nil
}

type urlServer struct {
	pb.UnimplementedURLServiceServer
	impl URLHook
}

func (s *urlServer) Configure(ctx context.Context, req *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	if err := s.impl.Configure(ctx, []byte(req.GetConfigJson())); err != nil {
		return nil, toStatus(err)
	}
	skip, ok := s.impl.(AfterSkipper)
	pure, isPure := s.impl.(PureBefore)
	return &pb.ConfigureResponse{SkipAfter: ok && skip.SkipAfter(), PureBefore: isPure && pure.PureBefore()}, nil
}

// maxWorkers bounds the goroutines answering one stream's calls at once.
const maxWorkers = 512

// Exchange answers each batch of calls with one batch of results. The calls of a batch come
// from different virtual users, so they run concurrently, on workers that live as long as the
// stream (a goroutine per call would grow a fresh stack every time); the last call of a batch
// to finish sends the batch's results.
func (s *urlServer) Exchange(stream pb.URLService_ExchangeServer) error {
	ctx := stream.Context()
	type batch struct {
		results []*pb.Result
		left    atomic.Int32
	}
	// A job is a run of calls of one batch: handing each call to a worker on its own would
	// cost a goroutine switch per call; a few calls per worker keep the batch concurrent.
	type job struct {
		b     *batch
		first int
		calls []*pb.Call
	}
	var sendMu sync.Mutex
	jobs := make(chan job)
	var workers sync.WaitGroup
	nworkers := 0
	worker := func() {
		defer workers.Done()
		for j := range jobs {
			for k, c := range j.calls {
				j.b.results[j.first+k] = s.call(ctx, c)
			}
			if j.b.left.Add(-int32(len(j.calls))) == 0 {
				sendMu.Lock()
				_ = stream.Send(&pb.ExchangeResponse{Results: j.b.results})
				sendMu.Unlock()
			}
		}
	}
	defer func() {
		close(jobs)
		workers.Wait()
	}()
	for {
		in, err := stream.Recv()
		if err != nil {
			return nil // the host closed the stream, or is gone
		}
		calls := in.GetCalls()
		if len(calls) == 0 {
			sendMu.Lock()
			_ = stream.Send(&pb.ExchangeResponse{})
			sendMu.Unlock()
			continue
		}
		b := &batch{results: make([]*pb.Result, len(calls))}
		b.left.Store(int32(len(calls)))
		per := max(1, len(calls)/(4*runtime.GOMAXPROCS(0)))
		for i := 0; i < len(calls); i += per {
			j := job{b: b, first: i, calls: calls[i:min(i+per, len(calls))]}
			select {
			case jobs <- j: // an idle worker took it
			default:
				if nworkers < maxWorkers {
					nworkers++
					workers.Add(1)
					go worker()
				}
				jobs <- j
			}
		}
	}
}

// call runs one hook call; a panic in the author's code fails that call, not the process.
func (s *urlServer) call(ctx context.Context, c *pb.Call) (res *pb.Result) {
	res = &pb.Result{Id: c.GetId()}
	defer func() {
		if r := recover(); r != nil {
			res = &pb.Result{Id: c.GetId(), Error: "plugin panicked: " + panicText(r)}
		}
	}()
	call := Call{VU: int(c.GetVu()), Iteration: int64(c.GetIteration()), Request: c.GetRequestName()}
	switch ph := c.GetPhase().(type) {
	case *pb.Call_Before:
		req := requestFromProto(ph.Before)
		if err := s.impl.Before(ctx, call, req); err != nil {
			res.Error = err.Error()
			return res
		}
		patch(res, ph.Before, req)
	case *pb.Call_After:
		req := requestFromProto(ph.After.GetRequest())
		resp := responseFromProto(ph.After.GetResponse())
		out, err := s.impl.After(ctx, call, req, resp)
		if err != nil {
			res.Error = err.Error()
			return res
		}
		res.Vars, res.Fail = out.Vars, out.Fail
	default:
		res.Error = "call has neither before nor after"
	}
	return res
}

type sourceServer struct {
	pb.UnimplementedSourceModifierServiceServer
	impl SourceModifier
}

func (s *sourceServer) Modify(ctx context.Context, req *pb.ModifyRequest) (*pb.ModifyResponse, error) {
	out, err := s.impl.Modify(ctx, []byte(req.GetScriptJson()), []byte(req.GetConfigJson()))
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.ModifyResponse{ScriptJson: string(out)}, nil
}

// toStatus turns an author's error into a gRPC status the host maps back.
func toStatus(err error) error {
	var ce *ConfigError
	switch {
	case errors.As(err, &ce):
		st, derr := status.New(codes.InvalidArgument, ce.Error()).WithDetails(&errdetails.BadRequest{
			FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: ce.Field, Description: ce.Reason}},
		})
		if derr != nil {
			return status.Error(codes.InvalidArgument, ce.Error())
		}
		return st.Err()
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	}
	return status.Error(codes.Unknown, err.Error())
}

func infoToProto(i Info) *pb.DescribeResponse {
	d := &pb.DescribeResponse{
		Name: i.Name, Version: i.Version, Description: i.Description,
		ConfigSchema: i.ConfigSchema, ProtocolVersion: uint32(i.ProtocolVersion),
		Scope: toPB(scopes, i.Scope), Network: i.Network,
	}
	for _, k := range i.Kinds {
		d.Kinds = append(d.Kinds, toPB(kinds, k))
	}
	return d
}

func infoFromProto(d *pb.DescribeResponse) Info {
	i := Info{
		Name: d.GetName(), Version: d.GetVersion(), Description: d.GetDescription(),
		ConfigSchema: d.GetConfigSchema(), ProtocolVersion: int(d.GetProtocolVersion()),
		Scope: fromPB(scopes, d.GetScope()), Network: d.GetNetwork(),
	}
	for _, k := range d.GetKinds() {
		if k := fromPB(kinds, k); k != "" {
			i.Kinds = append(i.Kinds, k)
		}
	}
	return i
}

// pair is an SDK value and its protobuf counterpart.
type pair[A, B comparable] struct {
	sdk A
	pb  B
}

var (
	kinds  = []pair[Kind, pb.Kind]{{KindSessionElement, pb.Kind_KIND_SESSION_ELEMENT}, {KindURL, pb.Kind_KIND_URL}, {KindSourceModifier, pb.Kind_KIND_SOURCE_MODIFIER}}
	scopes = []pair[Scope, pb.Scope]{{ScopeRun, pb.Scope_SCOPE_RUN}, {ScopeVU, pb.Scope_SCOPE_VU}, {ScopeIteration, pb.Scope_SCOPE_ITERATION}}
)

// toPB maps v through table; the zero value (unspecified) when it is not there.
func toPB[A, B comparable](table []pair[A, B], v A) B {
	for _, e := range table {
		if e.sdk == v {
			return e.pb
		}
	}
	var zero B
	return zero
}

// fromPB maps v back through table; the zero value (unknown) when it is not there.
func fromPB[A, B comparable](table []pair[A, B], v B) A {
	for _, e := range table {
		if e.pb == v {
			return e.sdk
		}
	}
	var zero A
	return zero
}

func headersToProto(h http.Header) []*pb.Header {
	n := 0
	for _, vs := range h {
		n += len(vs)
	}
	out := make([]*pb.Header, 0, n)
	for k, vs := range h {
		for _, v := range vs {
			out = append(out, &pb.Header{Name: k, Value: v})
		}
	}
	return out
}

func headersFromProto(hs []*pb.Header) http.Header {
	h := make(http.Header, len(hs))
	for _, x := range hs {
		h.Add(x.GetName(), x.GetValue())
	}
	return h
}

func requestToProto(r *Request) *pb.HTTPRequest {
	return &pb.HTTPRequest{Method: r.Method, Url: r.URL, Headers: headersToProto(r.Header), Body: r.Body}
}

func requestFromProto(r *pb.HTTPRequest) *Request {
	return &Request{Method: r.GetMethod(), URL: r.GetUrl(), Header: headersFromProto(r.GetHeaders()), Body: r.GetBody()}
}

func responseToProto(r *Response) *pb.HTTPResponse {
	return &pb.HTTPResponse{
		Status: int32(r.Status), Headers: headersToProto(r.Header),
		BodyPreview: r.BodyPreview, DurationUs: r.Duration.Microseconds(),
	}
}

func responseFromProto(r *pb.HTTPResponse) *Response {
	return &Response{
		Status: int(r.GetStatus()), Header: headersFromProto(r.GetHeaders()),
		BodyPreview: r.GetBodyPreview(), Duration: time.Duration(r.GetDurationUs()) * time.Microsecond,
	}
}

func panicText(r any) string {
	if err, ok := r.(error); ok {
		return err.Error()
	}
	return fmt.Sprint(r)
}

// patch describes what Before changed of the request orig: only the headers, as set and
// delete lists, when method, URL and body are as they were (a signing hook adds a header and
// need not send the whole request back); else the whole request.
func patch(res *pb.Result, orig *pb.HTTPRequest, req *Request) {
	if req.Method != orig.GetMethod() || req.URL != orig.GetUrl() || !bytes.Equal(req.Body, orig.GetBody()) {
		res.Request = requestToProto(req)
		return
	}
	hs := orig.GetHeaders()
	// same says whether name has exactly the values vs in the original, without building a
	// map of it: a request has a few headers, and this runs for every call.
	same := func(name string, vs []string) bool {
		i := 0
		for _, h := range hs {
			if !strings.EqualFold(h.GetName(), name) {
				continue
			}
			if i >= len(vs) || vs[i] != h.GetValue() {
				return false
			}
			i++
		}
		return i == len(vs)
	}
	for name, vs := range req.Header {
		if same(name, vs) {
			continue
		}
		for _, v := range vs {
			res.SetHeaders = append(res.SetHeaders, &pb.Header{Name: name, Value: v})
		}
		if len(vs) == 0 {
			res.DeleteHeaders = append(res.DeleteHeaders, name)
		}
	}
	for i, h := range hs {
		name := textproto.CanonicalMIMEHeaderKey(h.GetName())
		if _, ok := req.Header[name]; ok || slices.ContainsFunc(hs[:i], func(p *pb.Header) bool { return strings.EqualFold(p.GetName(), name) }) {
			continue // kept, or already listed
		}
		res.DeleteHeaders = append(res.DeleteHeaders, name)
	}
}
