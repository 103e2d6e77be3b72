package run

import "fmt"

// StopReason is why load stopped. The values match the end states of a run on the server, so a
// shard's outcome needs no translation by text.
type StopReason uint8

// The stop reasons. Completed is the zero value: a run that nobody stopped ran to its end.
const (
	// Completed: the duration passed, the iteration budget was spent, or a sequential data
	// source ran out.
	Completed StopReason = iota
	// Canceled: someone asked for the load to stop (Stop, or the context handed to Start).
	Canceled
	// TimedOut: a hard deadline (Options.MaxDuration) cut the load while it was still due to
	// run.
	TimedOut
	// AbortedLimit: a limit other than time was reached.
	AbortedLimit
	// AbortedThreshold: an aborting threshold broke.
	AbortedThreshold
	// Failed: the load could not go on (an agent lost its server, say).
	Failed

	numStopReasons
)

var stopReasonNames = [numStopReasons]string{"finished", "canceled", "timed_out", "aborted_limit", "aborted_threshold", "failed"}

// String is the run state the reason ends in: "finished", "canceled", "timed_out",
// "aborted_limit", "aborted_threshold" or "failed".
func (r StopReason) String() string {
	if r < numStopReasons {
		return stopReasonNames[r]
	}
	return fmt.Sprintf("StopReason(%d)", uint8(r))
}

// MarshalText writes the reason's name.
func (r StopReason) MarshalText() ([]byte, error) {
	if r >= numStopReasons {
		return nil, fmt.Errorf("run: unknown stop reason %d", uint8(r))
	}
	return []byte(r.String()), nil
}

// UnmarshalText reads a name that String writes.
func (r *StopReason) UnmarshalText(b []byte) error {
	for i, n := range stopReasonNames {
		if n == string(b) {
			*r = StopReason(i)
			return nil
		}
	}
	return fmt.Errorf("unknown stop reason %q", b)
}

// Stop is why a run stopped, with the detail a person reads ("threshold "p95 < 300ms" broken at
// 12s", "canceled by the user").
type Stop struct {
	Reason StopReason `json:"reason"`
	Detail string     `json:"detail,omitempty"`
}

// String reads like "aborted_threshold: threshold ... broken at 12s".
func (s Stop) String() string {
	if s.Detail == "" {
		return s.Reason.String()
	}
	return s.Reason.String() + ": " + s.Detail
}
