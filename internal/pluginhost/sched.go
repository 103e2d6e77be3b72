package pluginhost

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// SchedBatch puts every thread of this process, and so every thread it starts later, under
// SCHED_BATCH, the policy plugins run under. A URL hook is a round trip between the generator
// and a plugin process, most often on the same core: under the default policy each side's
// wake-up preempts the other mid-work, and a batch of calls costs a dozen context switches
// where two would do. Under SCHED_BATCH a woken process waits for the running one to block,
// and the two take turns a batch at a time. The policy changes no priority: other work on the
// machine gets the same share of CPU as before, it is only not preempted on wake-ups.
func SchedBatch() error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			continue
		}
		if err := schedBatch(tid); err != nil && !errors.Is(err, unix.ESRCH) { // ESRCH: the thread ended
			return err
		}
	}
	return nil
}

// schedBatch moves one thread (0: the calling one) to SCHED_BATCH, keeping its nice value.
func schedBatch(tid int) error {
	attr, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return fmt.Errorf("sched_getattr of thread %d: %w", tid, err)
	}
	if attr.Policy != unix.SCHED_NORMAL && attr.Policy != unix.SCHED_BATCH {
		return nil // a real-time or idle policy someone chose on purpose stays
	}
	attr.Policy = unix.SCHED_BATCH
	if err := unix.SchedSetAttr(tid, attr, 0); err != nil {
		return fmt.Errorf("sched_setattr of thread %d: %w", tid, err)
	}
	return nil
}
