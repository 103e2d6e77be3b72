package run

import (
	"fmt"
	"time"
)

// Health is how the generator itself fared during one interval: the numbers that tell a slow
// target from a saturated load generator. It travels with the metrics (an agent sends it each
// second), so it encodes as JSON with durations in nanoseconds.
type Health struct {
	// CPU is the process's CPU use as a fraction of the cores it may use, Cores (GOMAXPROCS).
	CPU   float64 `json:"cpu"`
	Cores int     `json:"cores"`
	// LatenessMax and LatenessSum measure how late scheduled starts were (arrivals in the open
	// model, think times ending in the closed one), and Late how many were more than 10 ms late.
	LatenessMax time.Duration `json:"lateness_max_ns"`
	LatenessSum time.Duration `json:"lateness_sum_ns"`
	Scheduled   int64         `json:"scheduled"`
	Late        int64         `json:"late"`
	// Dropped counts open-model iterations that found no free VU.
	Dropped int64 `json:"dropped"`
	// ActiveVUs is the most VUs running at once in the interval: in the open model, where a VU
	// runs only while an iteration does, the concurrency the arrivals needed.
	ActiveVUs int64 `json:"active_vus"`
	// BusyTime is the VUs' time in iterations that ended in the interval, think times left
	// out; TargetTime the part of it spent waiting on the target, from each request's send to
	// its response's end. The rest was the generator's own work.
	BusyTime   time.Duration `json:"busy_ns,omitempty"`
	TargetTime time.Duration `json:"target_ns,omitempty"`
}

// The bounds of one second's health as an agent may report it: far above what any generator
// does in a second, low enough that a run's sums cannot overflow.
const (
	maxHealthCount = 1 << 32 // scheduled, late, dropped starts, active VUs
	maxHealthCores = 1 << 16
)

// Check refuses a health record that no generator could have measured in one second: negative
// or impossibly large counts or durations, a CPU share below 0 or above all cores. The server
// checks what agents report before it sums it. (The counts are not checked against each other:
// an interval's are read one by one while starts go on, so late may pass scheduled by a few.)
func (h Health) Check() error {
	switch {
	case h.CPU < 0 || h.CPU > float64(maxHealthCores):
		return fmt.Errorf("cpu %g: must be a share of the cores, from 0", h.CPU)
	case h.Cores < 0 || h.Cores > maxHealthCores:
		return fmt.Errorf("cores %d: must be from 0 to %d", h.Cores, maxHealthCores)
	case h.LatenessMax < 0 || h.LatenessMax > 7*24*time.Hour:
		return fmt.Errorf("lateness_max_ns %d: must be from 0 to a week", h.LatenessMax)
	case h.LatenessSum < 0 || h.LatenessSum > maxHealthCount*time.Second:
		return fmt.Errorf("lateness_sum_ns %d: must be from 0 to %d", h.LatenessSum, maxHealthCount*time.Second)
	case h.BusyTime < 0 || h.BusyTime > maxHealthCount*time.Second:
		return fmt.Errorf("busy_ns %d: must be from 0 to %d", h.BusyTime, maxHealthCount*time.Second)
	case h.TargetTime < 0 || h.TargetTime > maxHealthCount*time.Second:
		return fmt.Errorf("target_ns %d: must be from 0 to %d", h.TargetTime, maxHealthCount*time.Second)
	}
	for _, c := range []struct {
		name string
		n    int64
	}{{"scheduled", h.Scheduled}, {"late", h.Late}, {"dropped", h.Dropped}, {"active_vus", h.ActiveVUs}} {
		if c.n < 0 || c.n > maxHealthCount {
			return fmt.Errorf("%s %d: must be from 0 to %d", c.name, c.n, int64(maxHealthCount))
		}
	}
	return nil
}

// LateThreshold is how late a start may be before it counts as late: below it, the difference is
// scheduler noise that no target notices.
const LateThreshold = 10 * time.Millisecond

// Verdict says what limited the run: the generator (its CPU, its clock), and then its numbers
// measure the tool; or the target, which could not take the load asked for (VUs starved waiting
// on it while the generator was free), and then they measure the target.
type Verdict struct {
	GeneratorLimited bool
	Reasons          []string
	TargetLimited    bool
	TargetReasons    []string
	// Delivery is what the generator delivered of the load asked for.
	Delivery Delivery
}

// Delivery is whether a generator delivered the load asked for (SLOB's rule two): in the open
// model, the arrivals it started of those due, and how late; in the closed model, how the VUs'
// time split between waiting on the target and the generator's own work.
type Delivery struct {
	// Scheduled counts the open model's arrivals due (the closed model's think times), Late
	// those more than LateThreshold late, Dropped the arrivals that found no free VU.
	Scheduled, Late, Dropped int64
	// LatenessMean and LatenessMax are how late the scheduled starts were.
	LatenessMean, LatenessMax time.Duration
	// BusyTime and TargetTime are the VUs' time in iterations (think times left out) and the
	// part of it spent waiting on the target.
	BusyTime, TargetTime time.Duration
}

// TargetShare is the share of the VUs' busy time spent waiting on the target, 0 when unknown.
func (d Delivery) TargetShare() float64 {
	if d.BusyTime <= 0 {
		return 0
	}
	return min(float64(d.TargetTime)/float64(d.BusyTime), 1)
}

// Judge gives the verdict on a generator from its health, second by second: one agent's, or a
// local run's.
func Judge(seconds []Health) Verdict {
	var v Verdict
	if len(seconds) == 0 {
		return v
	}
	cores := seconds[0].Cores
	saturated, late, scheduled, dropped := 0, int64(0), int64(0), int64(0)
	var worst, lateness time.Duration
	for _, h := range seconds {
		// A process using all but a sliver of the machine cannot also keep its clock.
		if h.CPU >= 0.9 {
			saturated++
		}
		late += h.Late
		scheduled += h.Scheduled
		dropped += h.Dropped
		worst = max(worst, h.LatenessMax)
		lateness += h.LatenessSum
		v.Delivery.BusyTime += h.BusyTime
		v.Delivery.TargetTime += h.TargetTime
	}
	v.Delivery.Scheduled, v.Delivery.Late, v.Delivery.Dropped, v.Delivery.LatenessMax = scheduled, late, dropped, worst
	if scheduled > 0 {
		v.Delivery.LatenessMean = lateness / time.Duration(scheduled)
	}
	if saturated*4 >= len(seconds) {
		v.Reasons = append(v.Reasons, fmt.Sprintf("CPU saturated (90%%+ of %d cores) in %d of %d seconds", cores, saturated, len(seconds)))
	}
	if scheduled > 0 && late*100 > scheduled {
		v.Reasons = append(v.Reasons, fmt.Sprintf("%d of %d scheduled starts were over %s late (worst %s)", late, scheduled, LateThreshold, worst.Round(time.Millisecond)))
	}
	v.GeneratorLimited = len(v.Reasons) > 0
	if dropped > 0 {
		if v.GeneratorLimited {
			// A busy generator starves its VUs too: the drops are its own.
			v.Reasons = append(v.Reasons, fmt.Sprintf("%d iterations dropped because every VU was busy", dropped))
		} else {
			// The generator had room: its VUs were all waiting on the target.
			v.TargetReasons = append(v.TargetReasons, fmt.Sprintf("%d of %d iterations dropped because every VU was waiting on the target "+
				"while the generator had CPU to spare: the target could not keep up with the arrival rate (or max_vus is too low for its latency)",
				dropped, scheduled))
			v.TargetLimited = true
		}
	}
	return v
}
