package account

import (
	"context"
	"time"

	"github.com/barrage-load/barrage/internal/barrage"
)

// Rate allows N attempts per fixed window of length Per.
type Rate struct {
	N   int
	Per time.Duration
}

// RateLimits are the throttles on sign-in and sign-up: per client address (from the
// trusted-proxy setting) and per account (the email asked for).
type RateLimits struct {
	LoginPerClient, LoginPerAccount   Rate
	SignupPerClient, SignupPerAccount Rate
}

// DefaultRateLimits slow password guessing to a crawl without troubling people who mistype.
var DefaultRateLimits = RateLimits{
	LoginPerClient:   Rate{N: 30, Per: 5 * time.Minute},
	LoginPerAccount:  Rate{N: 10, Per: 5 * time.Minute},
	SignupPerClient:  Rate{N: 30, Per: time.Hour},
	SignupPerAccount: Rate{N: 5, Per: time.Hour},
}

// limit counts one attempt against key and refuses it when the window's allowance is spent.
// The counters live in PostgreSQL, so every replica enforces the same limit.
func (s *Service) limit(ctx context.Context, r Rate, key string) error {
	if r.N <= 0 {
		return nil
	}
	now := s.now()
	window := now.Truncate(r.Per)
	hits, err := s.store.HitRateLimit(ctx, key, window)
	if err != nil {
		return err
	}
	if hits > r.N {
		retry := window.Add(r.Per).Sub(now)
		return &barrage.RateLimitError{RetryAfterSeconds: int((retry + time.Second - 1) / time.Second)}
	}
	return nil
}
