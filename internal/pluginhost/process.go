package pluginhost

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/barrage-load/barrage/sdk"
)

// handshakeRe is go-plugin's handshake line: core version|protocol version|network|address|protocol.
var handshakeRe = regexp.MustCompile(`^\d+\|(\d+)\|(tcp|unix)\|[^|]+\|(grpc|netrpc)`)

func looksLikeHandshake(line string) bool { return handshakeRe.MatchString(line) }

func speaksProtocol(line string) bool {
	m := handshakeRe.FindStringSubmatch(line)
	return m != nil && m[1] == strconv.Itoa(sdk.ProtocolVersion) && m[3] == "grpc"
}

// stderrWatch passes a plugin's stderr on to go-plugin (which logs it) and keeps what explains
// a crash: the first line that starts a panic, a fatal error or a traceback, else the last line.
type stderrWatch struct {
	r io.ReadCloser

	mu      sync.Mutex
	partial []byte
	first   string // the first line that looks like the start of a crash
	last    string
}

// crashLine starts a crash report in Go, Python and most runtimes.
var crashLine = regexp.MustCompile(`^(panic: |fatal error: |runtime: |runtime/cgo: |SIG[A-Z]+: |Traceback |Segmentation fault|MemoryError|[A-Za-z.]*Error: )`)

func (w *stderrWatch) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if n > 0 {
		w.mu.Lock()
		w.partial = append(w.partial, p[:n]...)
		for {
			i := bytes.IndexByte(w.partial, '\n')
			if i < 0 {
				break
			}
			w.line(string(bytes.TrimRight(w.partial[:i], "\r")))
			w.partial = w.partial[i+1:]
		}
		if len(w.partial) > 4096 {
			w.partial = w.partial[:0]
		}
		w.mu.Unlock()
	}
	return n, err
}

func (w *stderrWatch) line(s string) {
	if strings.TrimSpace(s) == "" {
		return
	}
	s = printable(s) // it reaches the operator's terminal in errors
	if w.first == "" && crashLine.MatchString(s) {
		w.first = truncate(s, 300)
	}
	w.last = truncate(s, 300)
}

func (w *stderrWatch) Close() error { return w.r.Close() }

// printable is s with its control characters and invalid bytes escaped (\x1b, not ESC), so
// that a plugin's words cannot drive the terminal they are shown on.
func printable(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case unicode.IsPrint(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		s = s[size:]
	}
	return b.String()
}

// headline is the line that best says why the plugin ended.
func (w *stderrWatch) headline() string {
	if w == nil {
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.first != "" {
		return w.first
	}
	return w.last
}

// slogWriter takes go-plugin's log lines (which carry the plugin's stderr) to the host's
// logger at debug level.
type slogWriter struct {
	log *slog.Logger
}

func (w *slogWriter) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
		w.log.Debug(string(line))
	}
	return len(p), nil
}

// markerEnv marks a plugin's environment with the host that started it, so that a later host
// can find the plugins (and their children) of a host that died.
const markerEnv = "BARRAGE_PLUGIN_HOST"

// hostMarker identifies this process across pid reuse: pid and start time.
func hostMarker() string {
	pid := os.Getpid()
	return fmt.Sprintf("%d.%s", pid, startTime(pid))
}

// startTime is a process's start time in clock ticks since boot, from /proc/<pid>/stat.
func startTime(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name may hold spaces; fields resume after its closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// hostAlive says whether the host a marker names ("pid.start", then maybe "-" and more) still
// runs. A marker it cannot read counts as alive: what is not surely ours is left alone.
func hostAlive(marker string) bool {
	hostPid, rest, _ := strings.Cut(marker, ".")
	start, _, _ := strings.Cut(rest, "-")
	hp, err := strconv.Atoi(hostPid)
	if err != nil || hp <= 0 || start == "" {
		return true
	}
	return startTime(hp) == start
}

// sweep kills the processes left by plugin hosts that are gone: any process whose environment
// carries a marker of a host that no longer runs.
func sweep(log *slog.Logger) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			v, ok := bytes.CutPrefix(kv, []byte(markerEnv+"="))
			if !ok {
				continue
			}
			if hostAlive(string(v)) {
				break
			}
			log.Warn("killing a plugin process left by a host that died", slog.Int("pid", pid), slog.String("host", string(v)))
			_ = syscall.Kill(pid, syscall.SIGKILL)
			break
		}
	}
	sweepRunDirs(log)
}

// runDirPrefix starts the name of a host's folder of plugin copies, followed by its marker.
const runDirPrefix = "barrage-plugins-"

// sweepRunDirs removes the folders of plugin copies of hosts that are gone: a copy is as big as
// its plugin, and a host killed with SIGKILL cannot clean up after itself.
func sweepRunDirs(log *slog.Logger) {
	for _, dir := range deadHostDirs(os.TempDir()) {
		if err := os.RemoveAll(dir); err == nil {
			log.Info("removed the plugin copies of a host that died", slog.String("dir", dir))
		}
	}
}

// deadHostDirs lists the folders in base named for a host (runDirPrefix and its marker) that
// no longer runs.
func deadHostDirs(base string) []string {
	entries, err := os.ReadDir(base)
	if err != nil {
		return nil
	}
	var dirs []string
	for _, e := range entries {
		marker, ok := strings.CutPrefix(e.Name(), runDirPrefix)
		if ok && e.IsDir() && !hostAlive(marker) {
			dirs = append(dirs, filepath.Join(base, e.Name()))
		}
	}
	return dirs
}
