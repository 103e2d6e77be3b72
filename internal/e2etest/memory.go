package e2etest

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// RSSKiB is the resident memory of process pid, from /proc.
func RSSKiB(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}

// WatchRSS samples pid's resident memory until the function it returns is called, which says
// what it was at the start and the most it was since, in KiB.
func WatchRSS(t testing.TB, pid int) func() (base, peak int64) {
	t.Helper()
	base, err := RSSKiB(pid)
	require.NoError(t, err)
	var peak atomic.Int64
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if kib, err := RSSKiB(pid); err == nil {
				peak.Store(max(peak.Load(), kib))
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return func() (int64, int64) {
		close(stop)
		<-sampled
		return base, peak.Load()
	}
}
