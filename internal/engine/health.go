package engine

import (
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/barrage-load/barrage/internal/run"
)

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// healthMeter accumulates an interval's health from many goroutines.
type healthMeter struct {
	latenessMax atomic.Int64
	latenessSum atomic.Int64
	scheduled   atomic.Int64
	late        atomic.Int64
	dropped     atomic.Int64
	activeVUs   atomic.Int64
	peakVUs     atomic.Int64 // the most active at once since the interval began
	busyTime    atomic.Int64
	targetTime  atomic.Int64

	lastCPU  time.Duration
	lastWall time.Time
}

// vuStarted and vuEnded count a VU running, and the most at once.
func (m *healthMeter) vuStarted() {
	n := m.activeVUs.Add(1)
	for {
		peak := m.peakVUs.Load()
		if n <= peak || m.peakVUs.CompareAndSwap(peak, n) {
			return
		}
	}
}

func (m *healthMeter) vuEnded() { m.activeVUs.Add(-1) }

// observe records that something scheduled for intended actually began at actual.
func (m *healthMeter) observe(intended, actual time.Time) {
	m.scheduled.Add(1)
	d := actual.Sub(intended)
	if d <= 0 {
		return
	}
	m.latenessSum.Add(int64(d))
	if d > run.LateThreshold {
		m.late.Add(1)
	}
	for {
		cur := m.latenessMax.Load()
		if int64(d) <= cur || m.latenessMax.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}

// rotate returns the interval's health and starts the next interval.
func (m *healthMeter) rotate(now time.Time) run.Health {
	cpu := cpuTime()
	h := run.Health{
		LatenessMax: time.Duration(m.latenessMax.Swap(0)),
		LatenessSum: time.Duration(m.latenessSum.Swap(0)),
		Scheduled:   m.scheduled.Swap(0),
		Late:        m.late.Swap(0),
		Dropped:     m.dropped.Swap(0),
		ActiveVUs:   m.peakVUs.Swap(m.activeVUs.Load()),
		BusyTime:    time.Duration(m.busyTime.Swap(0)),
		TargetTime:  time.Duration(m.targetTime.Swap(0)),
		// GOMAXPROCS, not NumCPU: in a container limited to 2 CPUs on a 64-core host, the
		// limit is what the generator can saturate.
		Cores: runtime.GOMAXPROCS(0),
	}
	if wall := now.Sub(m.lastWall); !m.lastWall.IsZero() && wall > 0 {
		h.CPU = float64(cpu-m.lastCPU) / float64(wall) / float64(h.Cores)
	}
	m.lastCPU, m.lastWall = cpu, now
	return h
}
