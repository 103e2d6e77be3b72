//go:build !linux

package engine

import (
	"context"
	"time"
)

// newArrivalClock is the open model's clock elsewhere than Linux: the runtime's timers.
func newArrivalClock() *arrivalClock { return &arrivalClock{} }

// arrivalClock waits for arrivals' due times.
type arrivalClock struct{}

// waitUntil waits for due, and reports false if ctx ended first.
func (*arrivalClock) waitUntil(ctx context.Context, due time.Time) bool {
	return sleep(ctx, time.Until(due))
}

// close releases nothing.
func (*arrivalClock) close() {}
