package httpapi

import (
	"context"
	"fmt"
	"runtime"
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

// inflight counts each user's heavy requests in flight on this server, and runs at most so many
// of everyone's at once, so many of each user's at a time (one, for the parses): past that they
// wait their turn, so that what they cost together (memory to parse, CPU to convert) is bounded
// whoever sends them, and one user's requests never hold every turn while another's wait.
type inflight struct {
	mu        sync.Mutex
	users     map[uuid.UUID]*userTurns
	max       int
	userTurns int // turns one user's requests hold at once
	run       chan struct{}
	what      string // the requests counted, as a refusal names them
}

// userTurns are one user's heavy requests in flight, and the turns they may hold at once.
type userTurns struct {
	n    int
	turn chan struct{}
}

// newInflight allows perUser heavy requests per user (DefaultHeavyPerUser when 0), turnsPerUser of
// them running at once, and runs total of everyone's at once (when 0, one per two cores, two at
// least: one user's request leaves a turn to another's, and the other cores stay with the light
// requests of everyone else).
func newInflight(perUser, turnsPerUser, total int, what string) *inflight {
	if perUser <= 0 {
		perUser = DefaultHeavyPerUser
	}
	if total <= 0 {
		total = max(2, runtime.GOMAXPROCS(0)/2)
	}
	return &inflight{users: map[uuid.UUID]*userTurns{}, max: perUser, userTurns: max(1, turnsPerUser), run: make(chan struct{}, total), what: what}
}

// acquire counts one more of user's heavy requests and, when turn is set, waits for its turn:
// the user's own first (userTurns of theirs run at a time), then one of everyone's. It returns what
// ends it; it refuses with a *barrage.RateLimitError when user has max in flight already, and
// with ctx's error when ctx ends first.
func (f *inflight) acquire(ctx context.Context, user uuid.UUID, turn bool) (func(), error) {
	f.mu.Lock()
	u := f.users[user]
	if u == nil {
		u = &userTurns{turn: make(chan struct{}, f.userTurns)}
		f.users[user] = u
	}
	if u.n >= f.max {
		f.mu.Unlock()
		return nil, &barrage.RateLimitError{RetryAfterSeconds: heavyRetry,
			Reason: fmt.Sprintf("you have %d %s in flight, the most one user may have at once: send the next when one has ended", f.max, f.what)}
	}
	u.n++
	f.mu.Unlock()
	leave := func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if u.n--; u.n <= 0 {
			delete(f.users, user)
		}
	}
	if !turn {
		return leave, nil
	}
	select {
	case u.turn <- struct{}{}:
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	}
	select {
	case f.run <- struct{}{}:
		return func() { <-f.run; <-u.turn; leave() }, nil
	case <-ctx.Done():
		<-u.turn
		leave()
		return nil, ctx.Err()
	}
}
