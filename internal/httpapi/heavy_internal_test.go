package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
)

// tokenUsers authenticates a bearer token that is a user's id.
type tokenUsers struct{}

func (tokenUsers) Authenticate(_ context.Context, bearer string) (barrage.Principal, error) {
	id, err := uuid.Parse(bearer)
	if err != nil {
		return barrage.Principal{}, barrage.Errorf(barrage.ErrUnauthorized, "no such token")
	}
	return barrage.Principal{User: barrage.User{ID: id, Role: barrage.RoleUser}, Scopes: []barrage.Scope{barrage.ScopeRead, barrage.ScopeWrite}}, nil
}

// A user may have DefaultHeavyPerUser requests of the routes that cost real work in flight, one
// of them running at a time: one more is 429 with Retry-After and a detail that says why, at
// once; another user's go on, and an ended request frees its place. Routes that cost little are
// not counted.
func TestAUserHasOnlySoManyHeavyRequestsInFlight(t *testing.T) {
	t.Parallel()
	s := &server{log: slog.New(slog.DiscardHandler), auth: tokenUsers{}, heavy: newInflight(0, 1, 8, "requests that parse, convert, publish or render")}
	ada, bob := uuid.New(), uuid.New()
	entered := make(chan string)
	release := map[string]chan struct{}{ada.String(): make(chan struct{}), bob.String(): make(chan struct{})}
	r := chi.NewRouter()
	r.With(s.authorize).Post("/v1/tests/import", func(w http.ResponseWriter, r *http.Request) {
		who := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		entered <- who
		<-release[who]
		w.WriteHeader(http.StatusCreated)
	})
	r.With(s.authorize).Get("/v1/tests", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	do := func(method, path string, user uuid.UUID) *http.Response {
		req, err := http.NewRequestWithContext(context.Background(), method, srv.URL+path, strings.NewReader("{}"))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+user.String())
		res, err := srv.Client().Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { res.Body.Close() })
		return res
	}
	inFlight := func(user uuid.UUID) int {
		s.heavy.mu.Lock()
		defer s.heavy.mu.Unlock()
		if u := s.heavy.users[user]; u != nil {
			return u.n
		}
		return 0
	}
	held := make(chan int, DefaultHeavyPerUser+2)
	for range DefaultHeavyPerUser {
		go func() { held <- do("POST", "/v1/tests/import", ada).StatusCode }()
	}
	require.Equal(t, ada.String(), <-entered, "one of hers runs; the other waits for it")
	require.Eventually(t, func() bool { return inFlight(ada) == DefaultHeavyPerUser }, 10*time.Second, time.Millisecond)

	over := do("POST", "/v1/tests/import", ada)
	require.Equal(t, http.StatusTooManyRequests, over.StatusCode)
	require.Equal(t, "1", over.Header.Get("Retry-After"))
	var p struct{ Detail string }
	require.NoError(t, json.NewDecoder(over.Body).Decode(&p))
	require.Contains(t, p.Detail, "you have 2 requests that parse, convert, publish or render in flight")
	require.Equal(t, http.StatusOK, do("GET", "/v1/tests", ada).StatusCode, "a light route is not counted")

	go func() { held <- do("POST", "/v1/tests/import", bob).StatusCode }()
	require.Equal(t, bob.String(), <-entered, "another user's goes on")
	release[ada.String()] <- struct{}{}
	require.Equal(t, http.StatusCreated, <-held)
	require.Equal(t, ada.String(), <-entered, "her second runs once her first has ended")
	go func() { held <- do("POST", "/v1/tests/import", ada).StatusCode }() // the ended one freed a place
	require.Eventually(t, func() bool { return inFlight(ada) == DefaultHeavyPerUser }, 10*time.Second, time.Millisecond)
	close(release[ada.String()])
	close(release[bob.String()])
	require.Equal(t, ada.String(), <-entered)
	for range DefaultHeavyPerUser + 1 {
		require.Equal(t, http.StatusCreated, <-held)
	}
}

// Everyone's heavy requests run so many at once: one more waits its turn, and gives up when its
// request ends first.
func TestHeavyRequestsTakeTurns(t *testing.T) {
	t.Parallel()
	f := newInflight(0, 1, 1, "heavy requests")
	upload, err := f.acquire(t.Context(), uuid.New(), false)
	require.NoError(t, err, "an upload takes no turn")
	defer upload()
	first, err := f.acquire(t.Context(), uuid.New(), true)
	require.NoError(t, err)
	turn := make(chan func(), 1)
	go func() {
		done, err := f.acquire(t.Context(), uuid.New(), true)
		if err == nil {
			turn <- done
		}
	}()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = f.acquire(ctx, uuid.New(), true)
	require.ErrorIs(t, err, context.Canceled, "a request that ends while it waits gives up")
	select {
	case <-turn:
		t.Fatal("a second ran while the first held the only turn")
	default:
	}
	first()
	(<-turn)()
}

// One user's heavy requests take turns among themselves: with turns to spare, a user's second
// waits for their first, and another user's goes at once.
func TestOneUsersHeavyRequestsDoNotHoldEveryTurn(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newInflight(0, 1, 2, "heavy requests")
		ada, bob := uuid.New(), uuid.New()
		first, err := f.acquire(t.Context(), ada, true)
		require.NoError(t, err)
		second := make(chan func(), 1)
		go func() {
			done, err := f.acquire(t.Context(), ada, true)
			if err == nil {
				second <- done
			}
		}()
		synctest.Wait() // her second waits, blocked
		require.Empty(t, second, "a user's second ran beside their first")
		bobs, err := f.acquire(t.Context(), bob, true)
		require.NoError(t, err, "another user's takes the turn left")
		bobs()
		synctest.Wait()
		require.Empty(t, second, "a user's second ran beside their first")
		first()
		(<-second)()
	})
}
