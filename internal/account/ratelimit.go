package account

import (
	"context"
	"time"

	"github.com/barrage-load/barrage/internal/barrage"
)

// Rate is a throttle's allowance (barrage.Rate).
type Rate = barrage.Rate

// RateLimits are the throttles on sign-in and sign-up. Sign-in is throttled per client address
// (from the trusted-proxy setting), all attempts, and per account and client together, failures
// only: an attacker's wrong passwords slow that attacker and never lock the owner out, who signs
// in from elsewhere. Sign-up is throttled per client and per account (the email asked for).
//
// Guessing spread over many addresses meets GuessesPerAccount: wrong passwords for one account
// from every address together. Past it, an address the account has not signed in from lately
// (KnownFor) may try StrangersPerAccount times, all such addresses together: the campaign
// crawls, and the owner, at an address they used, signs in as ever. The account records when
// (barrage.User.GuessedAt), for its owner and admins to see, and the log says so.
type RateLimits struct {
	LoginPerClient, LoginPerAccount   Rate
	SignupPerClient, SignupPerAccount Rate
	GuessesPerAccount                 Rate
	StrangersPerAccount               Rate
}

// KnownFor is how long an address an account signed in from stays known: it signs in at full
// speed while strangers guess the account's password.
const KnownFor = 90 * 24 * time.Hour

// DefaultRateLimits slow password guessing to a crawl without troubling people who mistype.
var DefaultRateLimits = RateLimits{
	LoginPerClient:   Rate{N: 30, Per: 5 * time.Minute},
	LoginPerAccount:  Rate{N: 10, Per: 5 * time.Minute},
	SignupPerClient:  Rate{N: 30, Per: time.Hour},
	SignupPerAccount: Rate{N: 5, Per: time.Hour},
	// 50 wrong passwords an hour from everywhere, then 3 a minute from strangers: a dictionary
	// of a million words takes a year.
	GuessesPerAccount:   Rate{N: 50, Per: time.Hour},
	StrangersPerAccount: Rate{N: 3, Per: time.Minute},
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
	return s.store.Throttle(ctx, key, r, cost, s.now())
}
