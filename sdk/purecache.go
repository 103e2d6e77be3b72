package sdk

import (
	"encoding/binary"
	"net/http"
	"slices"
	"sync"

	"google.golang.org/protobuf/proto"

	pb "github.com/barrage-load/barrage/sdk/proto/barrage/plugin/v1"
)

// pureCache keeps the answers of a pure Before (see PureBefore) by the request they were for,
// so that the host makes the same changes to an identical request without a call. It keeps
// small requests only, and starts afresh when it holds cacheBytes: a run that repeats its
// requests fills it in its first moments, and one whose requests all differ pays a key and a
// look-up per call, far less than the call.
type pureCache struct {
	mu      sync.RWMutex
	answers map[string]*pb.Result
	size    int
	// gen counts the resets: an answer to a call made before the last one is not kept.
	gen uint64
}

const (
	// maxKeyBytes is the largest request the cache keeps (method, URL, headers and body).
	maxKeyBytes = 4 << 10
	// maxAnswerBytes is the largest answer the cache keeps: a hook may answer a small request
	// with a big one.
	maxAnswerBytes = 64 << 10
	// cacheBytes bounds the requests and answers kept, roughly.
	cacheBytes = 4 << 20
	// entryOverhead is what an entry costs besides its key and answer, roughly.
	entryOverhead = 128
)

var keyBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// cacheKey appends req to buf in a form that tells any two different requests apart; ok is
// false when it is too big to keep.
func cacheKey(buf []byte, req *Request) (_ []byte, ok bool) {
	field := func(s string) { buf = binary.AppendUvarint(buf, uint64(len(s))); buf = append(buf, s...) }
	field(req.Method)
	field(req.URL)
	buf = binary.AppendUvarint(buf, uint64(len(req.Body)))
	buf = append(buf, req.Body...)
	if len(buf) > maxKeyBytes {
		return buf, false
	}
	// Header is a map: its names in order, so that the same headers make the same key.
	var small [16]string
	names := small[:0]
	for name := range req.Header {
		names = append(names, name)
	}
	slices.Sort(names)
	buf = binary.AppendUvarint(buf, uint64(len(names)))
	for _, name := range names {
		vs := req.Header[name]
		field(name)
		buf = binary.AppendUvarint(buf, uint64(len(vs)))
		for _, v := range vs {
			field(v)
		}
	}
	return buf, len(buf) <= maxKeyBytes
}

// get returns the answer kept for key, if any, and the generation to put a new one under.
func (c *pureCache) get(key []byte) (*pb.Result, uint64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.answers[string(key)], c.gen
}

// put keeps r as the answer for key, unless r is too big to keep or the cache was reset since
// gen (the hook was configured again while the call was on its way).
func (c *pureCache) put(key []byte, r *pb.Result, gen uint64) {
	n := proto.Size(r)
	if n > maxAnswerBytes {
		return
	}
	n += len(key) + entryOverhead
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if c.answers == nil || c.size+n > cacheBytes {
		c.answers, c.size = make(map[string]*pb.Result), 0
	}
	if _, ok := c.answers[string(key)]; !ok {
		c.answers[string(key)] = r
		c.size += n
	}
}

// reset forgets every answer: the hook was configured again.
func (c *pureCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.answers, c.size = nil, 0
	c.gen++
}

// applyBefore makes the changes of a before call's answer r to req. A kept answer is shared
// by the calls it serves: a request it replaces whole gets a body of its own.
func applyBefore(r *pb.Result, req *Request, shared bool) {
	if nr := r.GetRequest(); nr != nil {
		*req = *requestFromProto(nr)
		if shared {
			req.Body = slices.Clone(req.Body)
		}
		return
	}
	if len(r.GetSetHeaders())+len(r.GetDeleteHeaders()) > 0 && req.Header == nil {
		req.Header = http.Header{}
	}
	for _, name := range r.GetDeleteHeaders() {
		req.Header.Del(name)
	}
	for i, h := range r.GetSetHeaders() {
		// The first value of a name replaces the old ones; the next values of that name add.
		if i == 0 || r.GetSetHeaders()[i-1].GetName() != h.GetName() {
			req.Header.Set(h.GetName(), h.GetValue())
		} else {
			req.Header.Add(h.GetName(), h.GetValue())
		}
	}
}
