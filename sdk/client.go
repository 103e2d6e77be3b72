package sdk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/barrage-load/barrage/sdk/internal/wire"
	pb "github.com/barrage-load/barrage/sdk/proto/barrage/plugin/v1"
)

// client is the host's side of a plugin: the same interfaces a plugin implements, carried over
// gRPC. Package host hands it out as a host.Client.
type client struct {
	conn   *grpc.ClientConn
	info   pb.InfoServiceClient
	source pb.SourceModifierServiceClient

	element elementClient
	url     *urlClient
}

// Interface checks: the gRPC clients are the interfaces authors implement.
var (
	_ SessionElement = elementClient{}
	_ URLHook        = (*urlClient)(nil)
	_ AfterSkipper   = (*urlClient)(nil)
	_ PureBefore     = (*urlClient)(nil)
	_ SourceModifier = (*client)(nil)
)

// newClient returns a client speaking to a plugin over conn.
func newClient(conn *grpc.ClientConn) *client {
	return &client{
		conn:    conn,
		info:    pb.NewInfoServiceClient(conn),
		source:  pb.NewSourceModifierServiceClient(conn),
		element: elementClient{c: pb.NewSessionElementServiceClient(conn)},
		url:     newURLClient(pb.NewURLServiceClient(conn)),
	}
}

// Describe asks the plugin what it is.
func (c *client) Describe(ctx context.Context) (Info, error) {
	d, err := c.info.Describe(ctx, &pb.DescribeRequest{})
	if err != nil {
		return Info{}, fromStatus(err)
	}
	return infoFromProto(d), nil
}

// Element returns the plugin's session element.
func (c *client) Element() SessionElement { return c.element }

// URL returns the plugin's URL hook. Calls from many goroutines share one stream and travel in
// batches.
func (c *client) URL() URLHook { return c.url }

// Modify runs the plugin's source modifier.
func (c *client) Modify(ctx context.Context, script, config []byte) ([]byte, error) {
	r, err := c.source.Modify(ctx, &pb.ModifyRequest{ScriptJson: string(script), ConfigJson: string(config)})
	if err != nil {
		return nil, fromStatus(err)
	}
	return []byte(r.GetScriptJson()), nil
}

// SetCallTimeout bounds every later URL-hook call: one the plugin does not answer within d
// fails with wire.ErrNoAnswer. Set it before the first call.
func (c *client) SetCallTimeout(d time.Duration) { c.url.timeout.Store(int64(d)) }

// Close ends the URL hook's stream, if one was opened. The connection belongs to go-plugin.
func (c *client) Close() error {
	c.url.close(wire.ErrClosed)
	return nil
}

// fromStatus maps a gRPC error from a plugin to the errors of package host.
func fromStatus(err error) error {
	if err == nil {
		return nil
	}
	s, ok := status.FromError(err)
	if !ok {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%w: %v", wire.ErrTimeout, err)
		}
		return err
	}
	msg := s.Message()
	switch s.Code() {
	case codes.InvalidArgument:
		for _, d := range s.Details() {
			if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) > 0 {
				v := br.GetFieldViolations()[0]
				return &ConfigError{Field: v.GetField(), Reason: v.GetDescription()}
			}
		}
		return &ConfigError{Reason: msg}
	case codes.Unavailable:
		return fmt.Errorf("%w: %s", wire.ErrUnavailable, msg)
	case codes.DeadlineExceeded:
		return fmt.Errorf("%w: %s", wire.ErrTimeout, msg)
	case codes.Unimplemented:
		return fmt.Errorf("%w: %s", wire.ErrUnimplemented, msg)
	case codes.Canceled:
		return context.Canceled
	}
	return fmt.Errorf("%w: %s", wire.ErrPlugin, msg)
}

type elementClient struct {
	c pb.SessionElementServiceClient
}

func (e elementClient) Configure(ctx context.Context, config []byte) ([]string, error) {
	r, err := e.c.Configure(ctx, &pb.ConfigureRequest{ConfigJson: string(config)})
	if err != nil {
		return nil, fromStatus(err)
	}
	return r.GetVariables(), nil
}

func (e elementClient) Next(ctx context.Context, n int) ([]Vars, error) {
	r, err := e.c.Next(ctx, &pb.NextRequest{Count: uint32(n)})
	if err != nil {
		return nil, fromStatus(err)
	}
	out := make([]Vars, len(r.GetSets()))
	for i, s := range r.GetSets() {
		out[i] = s.GetVars()
		if out[i] == nil {
			out[i] = Vars{}
		}
	}
	if r.GetExhausted() {
		return out, ErrExhausted
	}
	return out, nil
}

// maxBatch bounds the calls sent in one message, and batchBytes their bodies and URLs (well
// under wire.MaxMessageSize).
const (
	maxBatch   = 256
	batchBytes = 8 << 20
	// maxCallBytes bounds one call, with room under wire.MaxMessageSize for the rest of a message.
	maxCallBytes = wire.MaxMessageSize - 1<<20
)

// callSize estimates the bytes of a call on the wire: its bodies and URL, plus room for the
// rest.
func callSize(c *pb.Call) int {
	n := 512
	if b := c.GetBefore(); b != nil {
		n += len(b.GetBody()) + len(b.GetUrl())
	}
	if a := c.GetAfter(); a != nil {
		n += len(a.GetRequest().GetBody()) + len(a.GetRequest().GetUrl()) + len(a.GetResponse().GetBodyPreview())
	}
	return n
}

// urlClient gathers the calls of many goroutines into batches on one Exchange stream. There is
// no waiting to fill a batch: a call is sent at once when the stream is idle, and the calls
// that arrive while a batch is being sent go together in the next one, so batches grow with the
// load and a lone call pays no delay.
type urlClient struct {
	c pb.URLServiceClient

	startOnce sync.Once
	timeout   atomic.Int64 // the call timeout, in nanoseconds; 0 for none
	skipAfter atomic.Bool  // the plugin said it has nothing to do after responses
	pure      atomic.Bool  // the plugin said its Before is pure: cache keeps its answers
	cache     pureCache
	queue     chan *pb.Call // calls for the sender; it never touches a caller's pending
	// outstanding counts the calls sent and not yet answered; answered is signalled when it
	// falls to zero.
	outstanding atomic.Int64
	answered    chan struct{}

	mu      sync.Mutex
	waiting map[uint64]*pending
	nextID  uint64
	err     error // set once the stream has failed; every later call fails with it
	cancel  context.CancelFunc
	done    chan struct{}
}

type pending struct {
	res chan *pb.Result
	due int64 // when the call times out (Unix nanoseconds), if the client has a call timeout
}

// timedOut is what the sweeper hands a call that got no answer in time.
var timedOut = &pb.Result{}

var pendingPool = sync.Pool{New: func() any { return &pending{res: make(chan *pb.Result, 1)} }}

func newURLClient(c pb.URLServiceClient) *urlClient {
	return &urlClient{c: c, queue: make(chan *pb.Call, maxBatch), answered: make(chan struct{}, 1),
		waiting: make(map[uint64]*pending), done: make(chan struct{})}
}

func (u *urlClient) Configure(ctx context.Context, config []byte) error {
	r, err := u.c.Configure(ctx, &pb.ConfigureRequest{ConfigJson: string(config)})
	if err != nil {
		return fromStatus(err)
	}
	u.skipAfter.Store(r.GetSkipAfter())
	u.cache.reset()
	u.pure.Store(r.GetPureBefore())
	return nil
}

// SkipAfter says whether the plugin, as configured, has nothing to do after responses; After
// then returns at once without a call.
func (u *urlClient) SkipAfter() bool { return u.skipAfter.Load() }

// PureBefore says whether the plugin, as configured, declared its Before pure: Before then
// calls it only for requests it has not seen (see PureBefore).
func (u *urlClient) PureBefore() bool { return u.pure.Load() }

func (u *urlClient) Before(ctx context.Context, call Call, req *Request) error {
	var key []byte
	var gen uint64
	if u.pure.Load() {
		bp := keyBufs.Get().(*[]byte)
		defer keyBufs.Put(bp)
		k, ok := cacheKey((*bp)[:0], req)
		*bp = k
		if ok {
			var r *pb.Result
			if r, gen = u.cache.get(k); r != nil {
				applyBefore(r, req, true)
				return nil
			}
			key = k
		}
	}
	r, err := u.do(ctx, &pb.Call{
		Vu: uint32(call.VU), Iteration: uint64(call.Iteration), RequestName: call.Request,
		Phase: &pb.Call_Before{Before: ownRequest(req)},
	})
	if err != nil {
		return err
	}
	if r.GetError() != "" {
		return fmt.Errorf("%w: %s", wire.ErrPlugin, r.GetError())
	}
	if key != nil {
		u.cache.put(key, r, gen)
	}
	applyBefore(r, req, key != nil)
	return nil
}

func (u *urlClient) After(ctx context.Context, call Call, req *Request, resp *Response) (Outcome, error) {
	if u.skipAfter.Load() {
		return Outcome{}, nil
	}
	r, err := u.do(ctx, &pb.Call{
		Vu: uint32(call.VU), Iteration: uint64(call.Iteration), RequestName: call.Request,
		Phase: &pb.Call_After{After: &pb.Completed{Request: ownRequest(req), Response: ownResponse(resp)}},
	})
	if err != nil {
		return Outcome{}, err
	}
	if r.GetError() != "" {
		return Outcome{}, fmt.Errorf("%w: %s", wire.ErrPlugin, r.GetError())
	}
	return Outcome{Vars: r.GetVars(), Fail: r.GetFail()}, nil
}

// do sends one call and waits for its result.
func (u *urlClient) do(ctx context.Context, call *pb.Call) (*pb.Result, error) {
	if n := callSize(call); n > maxCallBytes {
		// gRPC would end the whole stream, and every VU's calls with it.
		return nil, fmt.Errorf("%w: the call is %d bytes, more than a plugin call carries (%d)", wire.ErrTooLarge, n, maxCallBytes)
	}
	u.startOnce.Do(u.start)
	p := pendingPool.Get().(*pending)
	u.mu.Lock()
	if u.err != nil {
		err := u.err
		u.mu.Unlock()
		pendingPool.Put(p)
		return nil, err
	}
	u.nextID++
	call.Id = u.nextID
	p.due = 0
	if t := u.timeout.Load(); t > 0 {
		p.due = time.Now().UnixNano() + t
	}
	u.waiting[call.Id] = p
	u.mu.Unlock()

	select {
	case u.queue <- call:
	case <-ctx.Done():
		u.forget(call.Id)
		return nil, ctxErr(ctx)
	case <-u.done:
		return nil, u.failure()
	}
	select {
	case r := <-p.res:
		pendingPool.Put(p)
		switch r {
		case nil:
			return nil, u.failure()
		case timedOut:
			return nil, fmt.Errorf("%w: no answer within %s", wire.ErrNoAnswer, time.Duration(u.timeout.Load()))
		}
		return r, nil
	case <-ctx.Done():
		u.forget(call.Id)
		return nil, ctxErr(ctx)
	}
}

func ctxErr(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: %v", wire.ErrTimeout, ctx.Err())
	}
	return ctx.Err()
}

// forget drops a call whose caller stopped waiting; its result, if it comes, is discarded. The
// pending value is not reused: the receiver may still hold it.
func (u *urlClient) forget(id uint64) {
	u.mu.Lock()
	delete(u.waiting, id)
	u.mu.Unlock()
}

func (u *urlClient) failure() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.err == nil {
		return wire.ErrClosed
	}
	return u.err
}

// start opens the stream and its sender and receiver.
func (u *urlClient) start() {
	ctx, cancel := context.WithCancel(context.Background())
	u.mu.Lock()
	closed := u.err != nil
	u.cancel = cancel
	u.mu.Unlock()
	if closed {
		cancel()
		return
	}
	stream, err := u.c.Exchange(ctx)
	if err != nil {
		u.close(fromStatus(err))
		return
	}
	go u.send(stream)
	go u.receive(stream)
	if t := time.Duration(u.timeout.Load()); t > 0 {
		go u.sweep(t)
	}
}

// sweep fails the calls that got no answer within the call timeout: one ticker for all calls,
// where a deadline per call would cost a timer each.
func (u *urlClient) sweep(timeout time.Duration) {
	tick := time.NewTicker(max(timeout/10, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-u.done:
			return
		case now := <-tick.C:
			u.mu.Lock()
			for id, p := range u.waiting {
				if p.due != 0 && now.UnixNano() > p.due {
					delete(u.waiting, id)
					p.res <- timedOut
				}
			}
			u.mu.Unlock()
		}
	}
}

func (u *urlClient) send(stream pb.URLService_ExchangeClient) {
	var calls []*pb.Call
	var held *pb.Call // a call that did not fit the batch: the first of the next one
	size := 0
	// add takes c into the batch unless it would push the batch over batchBytes; then c waits
	// for the next batch.
	add := func(c *pb.Call) bool {
		n := callSize(c)
		if len(calls) > 0 && size+n > batchBytes {
			held = c
			return false
		}
		calls = append(calls, c)
		size += n
		return true
	}
	full := func() bool { return held != nil || len(calls) >= maxBatch || size >= batchBytes }
	for {
		if held != nil {
			c := held
			held = nil
			add(c)
		}
		if len(calls) == 0 {
			select {
			case c := <-u.queue:
				add(c)
			case <-u.done:
				_ = stream.CloseSend()
				return
			}
		}
		// Take what is queued, then, while the previous batch awaits answers, gather the calls
		// that arrive meanwhile: batches grow with the plugin's round trip under load, and a
		// lone call still goes at once.
	gather:
		for !full() {
			select {
			case c := <-u.queue:
				if !add(c) {
					break gather
				}
			default:
				break gather
			}
		}
		for u.outstanding.Load() > 0 {
			queue := u.queue
			if full() {
				queue = nil
			}
			select {
			case c := <-queue:
				add(c)
			case <-u.answered: // the loop checks outstanding again
			case <-u.done:
				_ = stream.CloseSend()
				return
			}
		}
		u.outstanding.Add(int64(len(calls)))
		// A new message each time: gRPC may still hold the one sent before.
		if err := stream.Send(&pb.ExchangeRequest{Calls: calls}); err != nil {
			return // the stream is broken: receive sees why and fails every call
		}
		calls, size = nil, 0
	}
}

func (u *urlClient) receive(stream pb.URLService_ExchangeClient) {
	for {
		r, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("%w: the plugin ended the stream", wire.ErrUnavailable)
			}
			u.close(fromStatus(err))
			return
		}
		u.mu.Lock()
		for _, res := range r.GetResults() {
			if p, ok := u.waiting[res.GetId()]; ok {
				delete(u.waiting, res.GetId())
				p.res <- res
			}
		}
		u.mu.Unlock()
		// Answers may come a batch to a message or a few calls at a time (as the Python SDK
		// does); the next batch goes once every call sent is answered.
		if u.outstanding.Add(-int64(len(r.GetResults()))) <= 0 {
			select {
			case u.answered <- struct{}{}:
			default:
			}
		}
	}
}

// close fails every waiting call and every later one with err.
func (u *urlClient) close(err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.err != nil {
		return
	}
	u.err = err
	for id, p := range u.waiting {
		delete(u.waiting, id)
		p.res <- nil
	}
	close(u.done)
	if u.cancel != nil {
		u.cancel()
	}
}

// ownRequest and ownResponse copy what a call carries, bodies included: a caller that stops
// waiting (its context ended) reuses its buffers while the call may still be on its way.
func ownRequest(r *Request) *pb.HTTPRequest {
	m := requestToProto(r)
	m.Body = bytes.Clone(m.Body)
	return m
}

func ownResponse(r *Response) *pb.HTTPResponse {
	m := responseToProto(r)
	m.BodyPreview = bytes.Clone(m.BodyPreview)
	return m
}
