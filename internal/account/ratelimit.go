package account

import (
	"context"
	"time"

	"github.com/barrage-load/barrage/internal/barrage"
)

// Rate allows N attempts at once, and N more per Per, refilled continuously: a token bucket, so
// no boundary between windows lets twice the allowance through.
type Rate struct {
	N   int
	Per time.Duration
}

// RateLimits are the throttles on sign-in and sign-up. Sign-in is throttled per client address
// (from the trusted-proxy setting), all attempts, and per account and client together, failures
// only: an attacker's wrong passwords slow that attacker and never lock the owner out, who signs
// in from elsewhere. Sign-up is throttled per client and per account (the email asked for).
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

// limit takes one attempt from key's bucket and refuses it when the bucket is empty. The buckets
// live in PostgreSQL, so every replica enforces the same limit.
func (s *Service) limit(ctx context.Context, r Rate, key string) error {
	return s.bucket(ctx, r, key, 1)
}

// allowed refuses an attempt when key's bucket is empty, taking nothing from it: failed takes
// from it once the attempt has failed.
func (s *Service) allowed(ctx context.Context, r Rate, key string) error {
	return s.bucket(ctx, r, key, 0)
}

// failed takes one from key's bucket for an attempt that failed.
func (s *Service) failed(ctx context.Context, r Rate, key string) error {
	return s.bucket(ctx, r, key, 1)
}

func (s *Service) bucket(ctx context.Context, r Rate, key string, cost float64) error {
	if r.N <= 0 || r.Per <= 0 {
		return nil
	}
	ok, wait, err := s.store.TakeToken(ctx, key, float64(r.N), float64(r.N)/r.Per.Seconds(), cost, s.now())
	if err != nil {
		return err
	}
	if !ok {
		return &barrage.RateLimitError{RetryAfterSeconds: max(int((wait+time.Second-1)/time.Second), 1)}
	}
	return nil
}
