package httpapi

import (
	"fmt"
	"sync"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
)

// DefaultHeavyPerUser is how many requests of the routes that cost the server real work (parsing
// a script, converting a recording, checking a plugin, rendering a report, comparing runs) one
// user may have in flight on a server at once: a user gets their answers, and the cores stay
// shared with everyone else's.
const DefaultHeavyPerUser = 2

// heavyRetry is the Retry-After of a request refused because its user has enough in flight: a
// heavy request takes a second or so.
const heavyRetry = 1

// inflight counts each user's heavy requests in flight on this server.
type inflight struct {
	mu  sync.Mutex
	n   map[uuid.UUID]int
	max int
}

func newInflight(max int) *inflight {
	if max <= 0 {
		max = DefaultHeavyPerUser
	}
	return &inflight{n: map[uuid.UUID]int{}, max: max}
}

// acquire counts one more of user's heavy requests, and returns what ends it; it refuses with a
// *barrage.RateLimitError when user has max in flight already.
func (f *inflight) acquire(user uuid.UUID) (func(), error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[user] >= f.max {
		return nil, &barrage.RateLimitError{RetryAfterSeconds: heavyRetry,
			Reason: fmt.Sprintf("you have %d requests that parse, convert, publish or render in flight, the most one user may have at once: send the next when one has ended", f.max)}
	}
	f.n[user]++
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.n[user]--; f.n[user] <= 0 {
			delete(f.n, user)
		}
	}, nil
}
