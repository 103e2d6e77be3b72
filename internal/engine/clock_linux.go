package engine

import (
	"context"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// coarseMargin is how long before an arrival's due time the runtime's timer hands over to the
// precise sleep: the runtime's timers wake up to a millisecond late (the netpoller waits in
// whole milliseconds), the precise sleep within tens of microseconds.
const coarseMargin = 2 * time.Millisecond

// newArrivalClock is the open model's clock on Linux: the calling goroutine keeps its own
// thread, whose timer slack is set to a nanosecond (50 µs by default), and sleeps the last
// stretch before each arrival in the kernel (nanosleep), so that iterations start on time to
// within tens of microseconds instead of up to a millisecond late. The goroutine must exit
// without unlocking its thread, which then ends with it.
func newArrivalClock() arrivalClock {
	runtime.LockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0) // best effort: the default slack is 50 µs
	return arrivalClock{}
}

// arrivalClock waits for arrivals' due times.
type arrivalClock struct{}

// waitUntil waits for due, and reports false if ctx ended first. Until the last coarseMargin it
// waits on a timer, so ctx can end it; the rest, in nanosleep.
func (arrivalClock) waitUntil(ctx context.Context, due time.Time) bool {
	if !sleep(ctx, time.Until(due)-coarseMargin) {
		return false
	}
	if w := time.Until(due); w > 0 {
		ts := unix.NsecToTimespec(int64(w))
		for unix.Nanosleep(&ts, &ts) == unix.EINTR {
		}
	}
	return ctx.Err() == nil
}
