package pluginhost_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/barrage-load/barrage/internal/pluginhost"
	"github.com/barrage-load/barrage/sdk"
)

// procCPU is the user and system time of a process, from /proc/<pid>/stat.
func procCPU(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // clock ticks; USER_HZ is 100 on Linux
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sandboxModes are the two ways a benchmark starts plugins: in the sandbox, and without it.
var sandboxModes = []struct {
	name string
	mode pluginhost.SandboxMode
}{{"Sandboxed", pluginhost.SandboxAuto}, {"Off", pluginhost.SandboxOff}}

// BenchmarkStart is the start-up of a plugin: copy checked, launcher, namespaces and view of
// the files, cgroup, exec, go-plugin's handshake with AutoMTLS, and Describe; sandboxed and not.
func BenchmarkStart(b *testing.B) {
	for _, m := range sandboxModes {
		b.Run(m.name, func(b *testing.B) {
			h, err := pluginhost.New(pluginhost.Options{Sandbox: m.mode})
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			if m.mode != pluginhost.SandboxOff && !h.Sandbox().Full() {
				b.Logf("%s", h.Sandbox())
			}
			spec := pluginhost.Spec{Name: "good", Version: "1.0.0", Path: testPlugin, SHA256: testPluginSum}
			for i := 0; i < b.N; i++ {
				p, err := h.Start(context.Background(), spec)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				p.Close()
				b.StartTimer()
			}
		})
	}
}

// BenchmarkURLHookCall is one URL-hook call (Before) across the process boundary, from 64
// goroutines at once as VUs make them, through the batching stream, sandboxed and not. It
// reports the CPU both processes spend per call.
func BenchmarkURLHookCall(b *testing.B) {
	for _, m := range sandboxModes {
		b.Run(m.name, func(b *testing.B) { benchmarkURLHookCall(b, m.mode) })
	}
}

func benchmarkURLHookCall(b *testing.B, mode pluginhost.SandboxMode) {
	ctx := context.Background()
	var env []string
	if path := os.Getenv("PLUGIN_CPUPROFILE"); path != "" {
		env = append(env, "BARRAGE_PLUGIN_CPUPROFILE="+path) // go test … PLUGIN_CPUPROFILE=/tmp/x
	}
	h, err := pluginhost.New(pluginhost.Options{Env: env, Sandbox: mode})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	p, err := h.Start(ctx, pluginhost.Spec{Name: "good", Version: "1.0.0", Path: testPlugin, SHA256: testPluginSum})
	if err != nil {
		b.Fatal(err)
	}
	hook := p.URL()
	header := http.Header{"Accept": {"*/*"}, "User-Agent": {"barrage"}}
	b.SetParallelism(32) // 64 goroutines on 2 cores
	host0, plug0 := selfCPU(), procCPU(b, p.Pid())
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := &sdk.Request{Method: "GET", URL: "http://127.0.0.1:8080/index.html", Header: header.Clone()}
			if err := hook.Before(ctx, sdk.Call{VU: 1, Iteration: 1, Request: "r"}, req); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(selfCPU()-host0)/float64(b.N)/1e3, "host-µs/call")
	b.ReportMetric(float64(procCPU(b, p.Pid())-plug0)/float64(b.N)/1e3, "plugin-µs/call")
}
