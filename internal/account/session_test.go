package account_test

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/account"
	"github.com/barrage-load/barrage/internal/auth"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/pgtest"
	"github.com/barrage-load/barrage/internal/postgres"
)

const password = "correct horse battery staple"

var client = netip.MustParseAddr("192.0.2.1")

func newService(t *testing.T) *account.Service {
	t.Helper()
	store := postgres.NewStore(pgtest.Pool(t))
	key, err := auth.LoadOrCreateKey(t.TempDir()+"/k.pem", true)
	require.NoError(t, err)
	lots := account.Rate{N: 1 << 30, Per: time.Hour}
	return account.New(store,
		auth.NewHasher(auth.Argon2Params{MemoryKiB: 64, Iterations: 1, Parallelism: 1, SaltLen: 16, KeyLen: 32}),
		auth.NewTokens(key, "barrage", "barrage-api", 15*time.Minute),
		slog.New(slog.DiscardHandler),
		account.Config{RefreshTTL: time.Hour, RateLimits: account.RateLimits{LoginPerClient: lots, LoginPerAccount: lots, SignupPerClient: lots, SignupPerAccount: lots}})
}

// adminAndUser signs up the first admin and one user, and returns their principals.
func adminAndUser(t *testing.T, s *account.Service) (barrage.Principal, barrage.Principal) {
	t.Helper()
	ctx := context.Background()
	code, err := s.EnsureFirstAdmin(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Signup(ctx, account.SignupInput{InvitationCode: code, Email: "admin@example.com", Password: password, Name: "A"}, client))
	adm, err := s.Login(ctx, "admin@example.com", password, client)
	require.NoError(t, err)
	ap, err := s.Authenticate(ctx, adm.AccessToken)
	require.NoError(t, err)
	_, ucode, err := s.CreateInvitation(ctx, &ap.User.ID, account.InvitationInput{})
	require.NoError(t, err)
	require.NoError(t, s.Signup(ctx, account.SignupInput{InvitationCode: ucode, Email: "user@example.com", Password: password, Name: "U"}, client))
	us, err := s.Login(ctx, "user@example.com", password, client)
	require.NoError(t, err)
	up, err := s.Authenticate(ctx, us.AccessToken)
	require.NoError(t, err)
	return ap, up
}

// A thief who stole a refresh token keeps rotating it; the victim replays the original. Once the
// replay has been refused, the thief's chain must be dead: no refresh may succeed after it.
func TestReuseDetectionStopsARotatingThief(t *testing.T) {
	t.Parallel()
	s := newService(t)
	ctx := context.Background()
	_, _ = adminAndUser(t, s)
	for trial := range 15 {
		sess, err := s.Login(ctx, "user@example.com", password, client)
		require.NoError(t, err)
		stolen := sess.RefreshToken
		next, err := s.Refresh(ctx, stolen)
		require.NoError(t, err)

		var detected atomic.Bool
		successesAfter := make(chan int, 1)
		rotated := make(chan struct{}, 400)
		go func() {
			rt, after := next.RefreshToken, 0
			for range 400 {
				startedAfter := detected.Load()
				n, err := s.Refresh(ctx, rt)
				if err != nil {
					break
				}
				if startedAfter {
					after++
				}
				rt = n.RefreshToken
				rotated <- struct{}{}
			}
			successesAfter <- after
		}()
		// The replay meets the thief's chain at another point each trial: after 0 to 4 of its
		// rotations, and racing the next.
		for range trial % 5 {
			select {
			case <-rotated:
			case <-successesAfter:
				t.Fatalf("trial %d: the thief's chain ended before the replay", trial)
			}
		}
		_, err = s.Refresh(ctx, stolen)
		require.ErrorIs(t, err, barrage.ErrUnauthorized)
		detected.Store(true)
		require.Zero(t, <-successesAfter, "trial %d: the thief refreshed after reuse was detected", trial)
	}
}

// Logging out while another tab refreshes the same session leaves nothing alive.
func TestLogoutRacingRefreshLeavesNoLiveToken(t *testing.T) {
	t.Parallel()
	s := newService(t)
	ctx := context.Background()
	_, _ = adminAndUser(t, s)
	for range 15 {
		sess, err := s.Login(ctx, "user@example.com", password, client)
		require.NoError(t, err)
		var wg sync.WaitGroup
		var rotated account.Session
		var rotateErr, logoutErr error
		wg.Add(2)
		go func() { defer wg.Done(); rotated, rotateErr = s.Refresh(ctx, sess.RefreshToken) }()
		go func() { defer wg.Done(); logoutErr = s.Logout(ctx, sess.RefreshToken) }()
		wg.Wait()
		require.NoError(t, logoutErr)
		if rotateErr == nil {
			_, err := s.Refresh(ctx, rotated.RefreshToken)
			require.ErrorIs(t, err, barrage.ErrUnauthorized, "a token minted during logout must be revoked with its family")
		}
	}
}

// Refreshes racing an admin who disables and enables the user: every call answers with a domain
// error or succeeds, never a database deadlock.
func TestRefreshRacingDisableDoesNotDeadlock(t *testing.T) {
	t.Parallel()
	s := newService(t)
	ctx := context.Background()
	ap, up := adminAndUser(t, s)
	stop := time.Now().Add(2 * time.Second)
	var unexpected atomic.Value
	check := func(err error) {
		if err != nil && !errors.Is(err, barrage.ErrUnauthorized) && !errors.Is(err, barrage.ErrForbidden) {
			unexpected.Store(err)
		}
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				sess, err := s.Login(ctx, "user@example.com", password, client)
				check(err)
				if err != nil {
					continue
				}
				rt := sess.RefreshToken
				for range 20 {
					n, err := s.Refresh(ctx, rt)
					check(err)
					if err != nil {
						break
					}
					rt = n.RefreshToken
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		on := true
		for time.Now().Before(stop) {
			_, err := s.UpdateUser(ctx, ap, up.User.ID, account.UserPatch{Disabled: &on})
			check(err)
			on = !on
		}
	}()
	wg.Wait()
	if err, ok := unexpected.Load().(error); ok {
		t.Fatalf("unexpected error: %v", err)
	}
}
