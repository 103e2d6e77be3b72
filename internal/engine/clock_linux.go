package engine

import (
	"context"
	"encoding/binary"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// coarseMargin is how long before an arrival's due time the runtime's timer hands over to the
// precise one: the runtime's timers wake up to a millisecond late when the generator is idle
// (the netpoller waits in whole milliseconds), the kernel's timer within tens of microseconds.
const coarseMargin = 2 * time.Millisecond

// minWake is the shortest wait on the kernel's timer. Arming it costs a system call, and in a
// virtual machine an exit to the hypervisor: one wait for each arrival took most of the CPU of an
// open model asked for 400,000 arrivals a second. At rates whose gaps are shorter, the clock
// wakes once a minWake and starts every arrival then due, each measured from its own due time:
// an arrival is at most minWake late for it, and the lateness is counted.
const minWake = 50 * time.Microsecond

// newArrivalClock is the open model's clock on Linux: the last stretch before each arrival is
// waited on a timerfd, a kernel timer without slack that the runtime's netpoller watches like a
// socket, so that iterations start on time to within tens of microseconds instead of up to a
// millisecond late. Waiting on it parks the scheduling goroutine and leaves its processor to the
// VUs: a sleep in a system call (nanosleep, as before) held the processor until the runtime's
// monitor took it back, and every wake-up passed the work between two threads, which capped the
// open model at a few thousand arrivals a second on one core. Without a timerfd (an old kernel,
// a sandbox), the runtime's timers alone.
func newArrivalClock() *arrivalClock {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return &arrivalClock{}
	}
	return &arrivalClock{fd: fd, f: os.NewFile(uintptr(fd), "timerfd")}
}

// arrivalClock waits for arrivals' due times.
type arrivalClock struct {
	fd  int
	f   *os.File // the timerfd, nil without one
	buf [8]byte  // a read's expiry count
}

// waitUntil waits for due, and reports false if ctx ended first. Until the last coarseMargin it
// waits on a runtime timer, so ctx can end it; the rest, on the timerfd. A due time already past
// costs no wait at all: a schedule running late starts what is due at once.
func (c *arrivalClock) waitUntil(ctx context.Context, due time.Time) bool {
	w := time.Until(due)
	if w <= 0 {
		return ctx.Err() == nil
	}
	if w > coarseMargin {
		if !sleep(ctx, w-coarseMargin) {
			return false
		}
		if w = time.Until(due); w <= 0 {
			return ctx.Err() == nil
		}
	}
	if c.f == nil {
		return sleep(ctx, w)
	}
	// A wait shorter than minWake waits minWake: the arrivals due by then start together.
	w = max(w, minWake)
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(w))}
	if err := unix.TimerfdSettime(c.fd, 0, &spec, nil); err != nil {
		return sleep(ctx, w)
	}
	if _, err := c.f.Read(c.buf[:]); err != nil || binary.NativeEndian.Uint64(c.buf[:]) == 0 {
		return sleep(ctx, time.Until(due))
	}
	return ctx.Err() == nil
}

// close releases the timerfd.
func (c *arrivalClock) close() {
	if c.f != nil {
		c.f.Close()
	}
}
