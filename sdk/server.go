package sdk

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
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
	return &pb.ConfigureResponse{}, nil
}

// Exchange answers each batch of calls with one batch of results. The calls of a batch come
// from different virtual users, so they run concurrently; the batch is answered when all are.
func (s *urlServer) Exchange(stream pb.URLService_ExchangeServer) error {
	ctx := stream.Context()
	var sendMu sync.Mutex
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		batch, err := stream.Recv()
		if err != nil {
			return nil // the host closed the stream, or is gone
		}
		calls := batch.GetCalls()
		results := make([]*pb.Result, len(calls))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if len(calls) == 1 {
				results[0] = s.call(ctx, calls[0])
			} else {
				var cw sync.WaitGroup
				for i, c := range calls {
					cw.Add(1)
					go func() {
						defer cw.Done()
						results[i] = s.call(ctx, c)
					}()
				}
				cw.Wait()
			}
			sendMu.Lock()
			defer sendMu.Unlock()
			_ = stream.Send(&pb.ExchangeResponse{Results: results})
		}()
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
		res.Request = requestToProto(req)
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
		Scope: scopeToProto(i.Scope),
	}
	for _, k := range i.Kinds {
		d.Kinds = append(d.Kinds, kindToProto(k))
	}
	return d
}

func infoFromProto(d *pb.DescribeResponse) Info {
	i := Info{
		Name: d.GetName(), Version: d.GetVersion(), Description: d.GetDescription(),
		ConfigSchema: d.GetConfigSchema(), ProtocolVersion: int(d.GetProtocolVersion()),
		Scope: scopeFromProto(d.GetScope()),
	}
	for _, k := range d.GetKinds() {
		if k := kindFromProto(k); k != "" {
			i.Kinds = append(i.Kinds, k)
		}
	}
	return i
}

var kinds = []struct {
	k Kind
	p pb.Kind
}{{KindSessionElement, pb.Kind_KIND_SESSION_ELEMENT}, {KindURL, pb.Kind_KIND_URL}, {KindSourceModifier, pb.Kind_KIND_SOURCE_MODIFIER}}

func kindToProto(k Kind) pb.Kind {
	for _, e := range kinds {
		if e.k == k {
			return e.p
		}
	}
	return pb.Kind_KIND_UNSPECIFIED
}

func kindFromProto(p pb.Kind) Kind {
	for _, e := range kinds {
		if e.p == p {
			return e.k
		}
	}
	return ""
}

var scopes = []struct {
	s Scope
	p pb.Scope
}{{ScopeRun, pb.Scope_SCOPE_RUN}, {ScopeVU, pb.Scope_SCOPE_VU}, {ScopeIteration, pb.Scope_SCOPE_ITERATION}}

func scopeToProto(s Scope) pb.Scope {
	for _, e := range scopes {
		if e.s == s {
			return e.p
		}
	}
	return pb.Scope_SCOPE_UNSPECIFIED
}

func scopeFromProto(p pb.Scope) Scope {
	for _, e := range scopes {
		if e.p == p {
			return e.s
		}
	}
	return ""
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
