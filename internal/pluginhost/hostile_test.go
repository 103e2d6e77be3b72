package pluginhost_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/barrage-load/barrage/internal/netpolicy"
	"github.com/barrage-load/barrage/internal/pluginhost"
)

// Environment variables between a test and the copy of this test binary it starts as another
// user: the built test plugin and launcher, a secret planted in that host's own environment, and
// the cgroup folders it was given.
const (
	testPluginEnv    = "PLUGINHOST_TEST_PLUGIN"
	testLauncherEnv  = "PLUGINHOST_TEST_LAUNCHER"
	hostSecretEnv    = "PLUGINHOST_TEST_SECRET"
	delegatedCgroups = "PLUGINHOST_TEST_CGROUPS"
	expectFullEnv    = "PLUGINHOST_TEST_EXPECT_FULL"
)

// TestRequireSandbox: a host that requires the sandbox starts only where the probe finds all
// of it, and otherwise names what is missing. The runs as nobody say which to expect.
func TestRequireSandbox(t *testing.T) {
	sb, err := pluginhost.Probe(pluginhost.Options{})
	require.NoError(t, err)
	t.Log(sb)
	if want := os.Getenv(expectFullEnv); want != "" {
		require.Equal(t, want == "1", sb.Full(), "%s", sb)
	}
	h, err := pluginhost.New(pluginhost.Options{Sandbox: pluginhost.SandboxRequire})
	if sb.Full() {
		require.NoError(t, err)
		require.True(t, h.Sandbox().Full())
		require.NoError(t, h.Close())
		return
	}
	require.ErrorIs(t, err, pluginhost.ErrSandboxUnavailable)
	auto := newHost(t, pluginhost.Options{}).Sandbox()
	for _, c := range []struct {
		what          string
		probe, hosted error
	}{{"no namespaces", sb.Namespaces, auto.Namespaces}, {"no cgroup", sb.Cgroup, auto.Cgroup}, {"no seccomp", sb.Seccomp, auto.Seccomp}} {
		if c.probe != nil {
			require.ErrorContains(t, err, c.what)
		}
		require.Equal(t, c.probe != nil, c.hosted != nil, "%s: without the requirement the host falls back as the probe said", c.what)
	}
}

// hostileWorld is what a hostile plugin goes after: the host's process, the user's files, other
// plugins, and listeners on the host's addresses.
type hostileWorld struct {
	root                  bool
	token                 string
	credentials, dataFile string
	manifest              string
	tcpLocal, tcpOther    string
	udpLocal, udpOther    *net.UDPConn
	// greeter is a listener on 127.0.0.1 that plugins are granted in the cases of grants.
	greeter string
	// inheritedFD is a file holding the token that this process opened without close-on-exec,
	// as a host started with a token on a descriptor has one.
	inheritedFD int
	// vsock says whether this machine opens vsock sockets at all.
	vsock bool
}

func newHostileWorld(t *testing.T) *hostileWorld {
	t.Helper()
	w := &hostileWorld{root: os.Geteuid() == 0, token: randomToken(t)}
	home := t.TempDir()
	write := func(path, content string, mode os.FileMode) string {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), mode))
		return path
	}
	w.credentials = write(filepath.Join(home, ".config", "barrage", "credentials.json"), `{"token": "`+w.token+`"}`, 0o600)
	w.dataFile = write(filepath.Join(home, ".barrage", "runs", "run.json"), `{"secret": "`+w.token+`"}`, 0o600)
	w.manifest = write(filepath.Join(home, ".local", "share", "barrage", "plugins", "other", "1.0.0", "plugin.json"), `{"name": "other"}`, 0o644)
	secret := write(filepath.Join(home, "token"), w.token, 0o600)
	fd, err := syscall.Open(secret, syscall.O_RDONLY, 0) // no O_CLOEXEC: inherited by children
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Close(fd) })
	w.inheritedFD = fd
	if vfd, err := syscall.Socket(40 /* AF_VSOCK */, syscall.SOCK_STREAM, 0); err == nil {
		w.vsock = true
		_ = syscall.Close(vfd)
	}

	tcp := func(addr string) string {
		ln, err := net.Listen("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { _ = ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				_ = c.Close()
			}
		}()
		return ln.Addr().String()
	}
	udp := func(addr string) *net.UDPConn {
		a, err := net.ResolveUDPAddr("udp", addr)
		require.NoError(t, err)
		c, err := net.ListenUDP("udp", a)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	w.tcpLocal, w.udpLocal = tcp("127.0.0.1:0"), udp("127.0.0.1:0")
	w.greeter = newGreeter(t).Addr
	if ip := otherAddress(); ip != "" {
		w.tcpOther, w.udpOther = tcp(ip+":0"), udp(ip+":0")
	}
	return w
}

// otherAddress is an address of this machine's other than loopback, where a database or an
// API could listen.
func otherAddress() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	return ""
}

func randomToken(t *testing.T) string {
	var b [12]byte
	_, err := rand.Read(b[:])
	require.NoError(t, err)
	return "tok" + hex.EncodeToString(b[:])
}

// hostileCase is one escape: what it tries, and whether the confinement before the sandbox
// let it through for this user (the findings of the review).
type hostileCase struct {
	name        string
	offEscapes  func(w *hostileWorld) bool
	needsCgroup bool
	limits      pluginhost.Limits
	// policy is the host's dial policy, for the grants' cases; nil allows every address.
	policy *netpolicy.Policy
	// try makes the attempt with a host and says whether it got through.
	try func(t *testing.T, w *hostileWorld, h *pluginhost.Host, mode pluginhost.SandboxMode) bool
}

func always(*hostileWorld) bool         { return true }
func unlessRoot(w *hostileWorld) bool   { return !w.root }
func succeeded(result string) bool      { return strings.HasPrefix(result, "ok: ") }
func attackArgs(kind, target string) ar { return ar{"kind": kind, "target": target} }

type ar map[string]any

// tryAttack is attack for a plugin that may fail to start: it returns why.
func tryAttack(t *testing.T, h *pluginhost.Host, a ar) (string, error) {
	t.Helper()
	ctx := context.Background()
	p, err := h.Start(ctx, spec("hostile"))
	if err != nil {
		return "", err
	}
	t.Cleanup(p.Close)
	cfg, err := json.Marshal(a)
	require.NoError(t, err)
	if _, err := p.Element().Configure(ctx, cfg); err != nil {
		return "", err
	}
	sets, err := p.Element().Next(ctx, 1)
	if err != nil {
		return "", err
	}
	return sets[0]["result"], nil
}

// attack starts the hostile plugin, has it try a, and returns its answer ("ok: …", "err: …",
// or "stopped: …" when the plugin died trying) and the process, closed at the end of the test.
func attack(t *testing.T, h *pluginhost.Host, a ar) (string, *pluginhost.Process) {
	t.Helper()
	return attackAs(t, h, spec("hostile"), a)
}

// attackAs is attack with the hostile plugin's spec given: with grants.
func attackAs(t *testing.T, h *pluginhost.Host, s pluginhost.Spec, a ar) (string, *pluginhost.Process) {
	t.Helper()
	ctx := context.Background()
	p, err := h.Start(ctx, s)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	cfg, err := json.Marshal(a)
	require.NoError(t, err)
	_, err = p.Element().Configure(ctx, cfg)
	require.NoError(t, err)
	sets, err := p.Element().Next(ctx, 1)
	if err != nil {
		return "stopped: " + err.Error(), p
	}
	return sets[0]["result"], p
}

// readFile is an escape that reads a file and finds want in it.
func readFile(path func(w *hostileWorld) string) func(*testing.T, *hostileWorld, *pluginhost.Host, pluginhost.SandboxMode) bool {
	return func(t *testing.T, w *hostileWorld, h *pluginhost.Host, _ pluginhost.SandboxMode) bool {
		res, _ := attack(t, h, attackArgs("read", path(w)))
		t.Logf("read %s: %s", path(w), truncated(res))
		return succeeded(res) && strings.Contains(res, w.token)
	}
}

func truncated(s string) string {
	if len(s) > 160 {
		return s[:160] + "…"
	}
	return s
}

// lingerers are the running processes (see running) with the token among their arguments.
func lingerers(token string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(token)) && running(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// pendingSignals are the signals pending for a process's first thread and for the process, in
// /proc/PID/status.
var pendingSignals = regexp.MustCompile(`(?m)^(?:SigPnd|ShdPnd):\s+([0-9a-f]+)$`)

// running says whether a process lives and nothing has begun to kill it: it is no zombie, is
// not exiting, and has no SIGKILL pending. Once whatever should end a process has done its part
// (a kill is sent before the call that sends it returns), a process that still runs survived.
func running(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The command name may hold spaces; state and flags come after its closing parenthesis.
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	const pfExiting = 0x4 // PF_EXITING: the process is on its way out
	flags, err := strconv.ParseUint(f[6], 10, 64)
	if err != nil || f[0] == "Z" || f[0] == "X" || flags&pfExiting != 0 {
		return false
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false
	}
	for _, m := range pendingSignals.FindAllStringSubmatch(string(status), -1) {
		if pending, _ := strconv.ParseUint(m[1], 16, 64); pending&(1<<(syscall.SIGKILL-1)) != 0 {
			return false
		}
	}
	return true
}

// outlives has the plugin leave a child behind, closes the plugin, and says whether the child
// still runs then: Close returns once the plugin is gone, with its process group, its cgroup
// and (sandboxed) its PID namespace, whose processes the kernel ends before its init's exit is
// seen.
func outlives(kind string) func(*testing.T, *hostileWorld, *pluginhost.Host, pluginhost.SandboxMode) bool {
	return func(t *testing.T, w *hostileWorld, h *pluginhost.Host, _ pluginhost.SandboxMode) bool {
		token := randomToken(t)
		res, p := attack(t, h, ar{"kind": kind, "token": token})
		require.True(t, succeeded(res), "the plugin starts its child: %s", res)
		// A daemon's grandchild starts after its parent ends.
		require.Eventually(t, func() bool { return len(lingerers(token)) > 0 }, 5*time.Second, 10*time.Millisecond,
			"the child runs while the plugin does")
		p.Close()
		left := lingerers(token)
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		return len(left) > 0
	}
}

// outlivesKilledHost has the plugin of a host in another process shed its parent-death signal
// (kind orphan: clears it, and leaves a child; reexec: executes itself again from another
// thread), kills that host with SIGKILL (no chance to clean up, and no next host to sweep
// strays), and says whether the plugin or its child still runs once what should end them has
// done its part: the kernel sends the parent-death signal as the host exits; sandboxed, the
// launcher, the init of the plugin's PID namespace, exits when it sees the host gone, and the
// kernel ends the namespace's processes before that exit is seen.
func outlivesKilledHost(kind string) func(*testing.T, *hostileWorld, *pluginhost.Host, pluginhost.SandboxMode) bool {
	return func(t *testing.T, _ *hostileWorld, _ *pluginhost.Host, mode pluginhost.SandboxMode) bool {
		token := randomToken(t)
		host, lines, res := hostInAnotherProcess(t, mode, ar{"kind": kind, "token": token}, nil)
		var pid int
		_, err := fmt.Fscan(lines, &pid)
		require.NoError(t, err, "the host printed the plugin's pid")
		alive := func() []int {
			left := lingerers(token)
			if running(pid) {
				left = append(left, pid)
			}
			return left
		}
		if succeeded(res) {
			require.Eventually(t, func() bool { return len(lingerers(token)) > 0 }, 5*time.Second, 10*time.Millisecond,
				"the plugin's child runs, or it executed itself again")
		}
		// Sandboxed, the plugin is its launcher's child; without the sandbox the launcher
		// became the plugin, the host's child.
		launcher := -1
		if ppid := parentOf(t, pid); ppid != host.Process.Pid {
			launcher = openPidfd(t, ppid)
		}
		require.NoError(t, host.Process.Kill())
		_ = host.Wait()
		if launcher >= 0 {
			requireExits(t, launcher, "the launcher ends when its host is gone")
		}
		left := alive()
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		return len(left) > 0
	}
}

// parentOf is the parent of a process.
func parentOf(t *testing.T, pid int) int {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	ppid, err := strconv.Atoi(strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))[1])
	require.NoError(t, err)
	return ppid
}

// openPidfd opens a process's pidfd, closed at the end of the test: it names the process
// whatever becomes of its number, and is readable once the process has exited.
func openPidfd(t *testing.T, pid int) int {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Close(fd) })
	return fd
}

// requireExits waits for the process of a pidfd to exit.
func requireExits(t *testing.T, pidfd int, msg string) {
	t.Helper()
	for {
		fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int((30 * time.Second).Milliseconds()))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		require.NoError(t, err)
		require.Equal(t, 1, n, msg)
		return
	}
}

// hostInAnotherProcess starts a host in a copy of this test binary (hostThenWait) whose plugin
// tries a, sandboxed or not as mode says; with tty, in a session of its own whose controlling
// terminal tty is. It returns the host, killed at the end of the test, its output after the
// plugin's answer, and that answer.
func hostInAnotherProcess(t *testing.T, mode pluginhost.SandboxMode, a ar, tty *os.File) (*exec.Cmd, *bufio.Reader, string) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	host := exec.Command(exe, "-test.run=^$")
	attack, err := json.Marshal(a)
	require.NoError(t, err)
	host.Env = append(os.Environ(), killedHostEnv+"="+testPlugin, killedHostAttackEnv+"="+string(attack),
		testLauncherEnv+"="+testLauncher)
	if mode == pluginhost.SandboxOff {
		host.Env = append(host.Env, killedHostOffEnv+"=1")
	}
	if tty != nil {
		host.Stdin = tty
		host.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	}
	out, err := host.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, host.Start())
	if tty != nil {
		_ = tty.Close()
	}
	t.Cleanup(func() { _ = host.Process.Kill(); _ = host.Wait() })
	lines := bufio.NewReader(out)
	res, err := lines.ReadString('\n')
	require.NoError(t, err, "the host printed the plugin's answer")
	res = strings.TrimSpace(res)
	t.Logf("%s: %s", a["kind"], res)
	return host, lines, res
}

// typesIntoTerminal starts a host in another process whose controlling terminal is a
// pseudo-terminal, as a user's shell would start `barrage run`, and has its plugin type the
// token into that terminal; it says whether the token arrived as the terminal's input.
func typesIntoTerminal(t *testing.T, _ *hostileWorld, _ *pluginhost.Host, mode pluginhost.SandboxMode) bool {
	token := randomToken(t)
	ptm, pts := openPTY(t)
	_, _, res := hostInAnotherProcess(t, mode, ar{"kind": "tty", "token": token}, pts)
	// What was typed is echoed by the terminal: the master reads it.
	typed := make(chan string, 1)
	go func() {
		var got []byte
		buf := make([]byte, 256)
		for !bytes.Contains(got, []byte(token)) {
			n, err := ptm.Read(buf)
			if err != nil {
				break
			}
			got = append(got, buf[:n]...)
		}
		typed <- string(got)
	}()
	if !succeeded(res) {
		return false
	}
	select {
	case got := <-typed:
		return strings.Contains(got, token)
	case <-time.After(5 * time.Second):
		return false
	}
}

// openPTY opens a pseudo-terminal pair, closed at the end of the test.
func openPTY(t *testing.T) (ptm, pts *os.File) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ptm.Close() })
	require.NoError(t, unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(ptm.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	pts, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	return ptm, pts
}

// dial is an escape that reaches a listener over TCP.
func dialTCP(addr func(w *hostileWorld) string) func(*testing.T, *hostileWorld, *pluginhost.Host, pluginhost.SandboxMode) bool {
	return func(t *testing.T, w *hostileWorld, h *pluginhost.Host, _ pluginhost.SandboxMode) bool {
		if addr(w) == "" {
			t.Skip("this machine has no address but loopback")
		}
		res, _ := attack(t, h, attackArgs("tcp", addr(w)))
		t.Logf("tcp %s: %s", addr(w), res)
		return succeeded(res)
	}
}

// reach is an escape that gets to a listener over TCP, through the host's dial socket or
// directly, the plugin being granted the hosts grant names (none when nil).
func reach(grant func(w *hostileWorld) []string, target func(w *hostileWorld) string) func(*testing.T, *hostileWorld, *pluginhost.Host, pluginhost.SandboxMode) bool {
	return func(t *testing.T, w *hostileWorld, h *pluginhost.Host, _ pluginhost.SandboxMode) bool {
		s := spec("hostile")
		if grant != nil {
			s = granted(t, grant(w)...)
		}
		res, _ := attackAs(t, h, s, ar{"kind": "reach", "target": target(w), "token": randomToken(t)})
		t.Logf("reach %s granted %v: %s", target(w), s.Network, res)
		return succeeded(res)
	}
}

func grantGreeter(w *hostileWorld) []string { return []string{w.greeter} }

// sendUDP is an escape that gets a datagram to a listener.
func sendUDP(conn func(w *hostileWorld) *net.UDPConn) func(*testing.T, *hostileWorld, *pluginhost.Host, pluginhost.SandboxMode) bool {
	return func(t *testing.T, w *hostileWorld, h *pluginhost.Host, _ pluginhost.SandboxMode) bool {
		c := conn(w)
		if c == nil {
			t.Skip("this machine has no address but loopback")
		}
		token := randomToken(t)
		res, _ := attack(t, h, ar{"kind": "udp", "target": c.LocalAddr().String(), "token": token})
		t.Logf("udp %s: %s", c.LocalAddr(), res)
		if !succeeded(res) {
			return false
		}
		buf := make([]byte, 256)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(3*time.Second)))
		for {
			n, _, err := c.ReadFromUDP(buf)
			if err != nil {
				return false
			}
			if string(buf[:n]) == token {
				return true
			}
		}
	}
}

// socketFolderBound is what a sandboxed plugin may put in its socket folder at most: 1 MiB and
// 64 inodes, the tmpfs the launcher mounts at /run/barrage in the plugin's mount namespace.
const (
	socketFolderBound  = 1 << 20
	socketFolderInodes = 64
)

// fillsSocketFolder has the plugin go after the host's disk through its socket folder (issue 25,
// item 10: fallocate put 512 MiB there past the file size limit; then files within the limit,
// as many as it liked, as an ordinary user), with a fallocate of 512 MiB, mib files of 1 MiB and
// n sockets, and says whether the socket folders of the host's run dir, or the plugin's own,
// hold more than socketFolderBound once it answered.
func fillsSocketFolder(mib, n int) func(*testing.T, *hostileWorld, *pluginhost.Host, pluginhost.SandboxMode) bool {
	return func(t *testing.T, _ *hostileWorld, h *pluginhost.Host, mode pluginhost.SandboxMode) bool {
		sb := h.Sandbox()
		t.Logf("socket folder: %s", sb.SocketFolder)
		res, p := attack(t, h, ar{"kind": "fill", "mib": mib, "n": n})
		used := diskUse(t, h.RunDir())
		t.Logf("fill the socket folder: %s; %d KiB used in the run dir's folders", res, used>>10)
		require.True(t, succeeded(res), "the plugin tried: %s", res)
		if mode == pluginhost.SandboxOff {
			return used > socketFolderBound
		}
		if sb.Seccomp == nil {
			require.Contains(t, res, "fallocate 512 MiB: operation not supported")
		}
		// Sandboxed, whoever the host runs as: the folder is a tmpfs of the plugin's mount
		// namespace, and nothing of it lies in the host's run dir.
		require.Contains(t, sb.SocketFolder, "tmpfs")
		require.Empty(t, tmpfsMountsUnder(t, h.RunDir()), "the host mounts nothing")
		mount := socketFolderMount(t, p.Pid())
		require.Contains(t, mount, "size=1024k")
		require.Contains(t, mount, "nr_inodes=64")
		var st unix.Statfs_t
		require.NoError(t, unix.Statfs(fmt.Sprintf("/proc/%d/root/run/barrage", p.Pid()), &st))
		inFolder := int64(st.Blocks-st.Bfree) * st.Bsize
		t.Logf("the plugin's socket folder holds %d KiB and %d inodes", inFolder>>10, st.Files-st.Ffree)
		if mib > 0 {
			require.Contains(t, res, "no space left on device", "the tmpfs stopped the files")
			var sockets int
			_, err := fmt.Sscanf(res[strings.LastIndex(res, "; ")+2:], "%d sockets", &sockets)
			require.NoError(t, err)
			require.Less(t, sockets, socketFolderInodes, "the tmpfs's inodes bound the sockets too")
		}
		require.LessOrEqual(t, st.Files-st.Ffree, uint64(socketFolderInodes))
		return used > socketFolderBound || inFolder > socketFolderBound
	}
}

// socketFolderMount is the line of /proc/PID/mountinfo that mounts the plugin's /run/barrage.
func socketFolderMount(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == "/run/barrage" {
			require.Contains(t, line, " - tmpfs ", "the socket folder is a tmpfs")
			return line
		}
	}
	t.Fatalf("the plugin has no /run/barrage of its own:\n%s", b)
	return ""
}

// diskUse is the space the files in the run dir's folders take: the plugins' socket folders (the
// plugins' copies lie in the run dir itself). The folders' own entries are left out: a tmpfs
// does not count them against its size.
func diskUse(t *testing.T, runDir string) int64 {
	t.Helper()
	entries, err := os.ReadDir(runDir)
	require.NoError(t, err)
	var used int64
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		require.NoError(t, filepath.WalkDir(filepath.Join(runDir, e.Name()), func(_ string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			if !d.IsDir() {
				used += fi.Sys().(*syscall.Stat_t).Blocks * 512
			}
			return nil
		}))
	}
	return used
}

// tmpfsMountsUnder lists the tmpfs mounted below dir, as lines of /proc/self/mountinfo.
func tmpfsMountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], dir+"/") && strings.Contains(line, " - tmpfs ") {
			out = append(out, line)
		}
	}
	return out
}

// TestAKilledHostLeavesNoSocketFolderBehind: a host killed while its plugin fills its socket
// folder leaves nothing of the folder on the host (it is the plugin's tmpfs, gone with its
// namespaces), and the next host removes the rest of the dead host's run dir.
func TestAKilledHostLeavesNoSocketFolderBehind(t *testing.T) {
	if sb := newHost(t, pluginhost.Options{}).Sandbox(); sb.Namespaces != nil {
		t.Skipf("this machine cannot give plugins namespaces: %v", sb.Namespaces)
	}
	host, _, res := hostInAnotherProcess(t, pluginhost.SandboxAuto, ar{"kind": "fill", "mib": 2, "n": 4}, nil)
	require.True(t, succeeded(res), "the plugin tried: %s", res)
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("barrage-plugins-%d.*", host.Process.Pid)))
	require.NoError(t, err)
	require.Len(t, dirs, 1, "the host's run dir")
	require.Empty(t, tmpfsMountsUnder(t, dirs[0]), "the host mounts nothing")
	require.LessOrEqual(t, diskUse(t, dirs[0]), int64(socketFolderBound))

	require.NoError(t, host.Process.Kill()) // SIGKILL: the host has no chance to clean up
	_ = host.Wait()
	require.Empty(t, tmpfsMountsUnder(t, dirs[0]))

	newHost(t, pluginhost.Options{}) // sweeps what hosts that are gone left
	require.NoDirExists(t, dirs[0])
}

var hostileCases = []hostileCase{
	{name: "ReadTheHostsEnvironment", offEscapes: unlessRoot, try: func(t *testing.T, w *hostileWorld, h *pluginhost.Host, _ pluginhost.SandboxMode) bool {
		res, _ := attack(t, h, attackArgs("read", fmt.Sprintf("/proc/%d/environ", os.Getpid())))
		t.Logf("the host's environment: %s", truncated(res))
		want := "PATH="
		if s := os.Getenv(hostSecretEnv); s != "" {
			want = hostSecretEnv + "=" + s
		}
		return succeeded(res) && strings.Contains(res, want)
	}},
	{name: "OpenTheHostsMemory", offEscapes: unlessRoot, try: func(t *testing.T, w *hostileWorld, h *pluginhost.Host, _ pluginhost.SandboxMode) bool {
		res, _ := attack(t, h, attackArgs("open", fmt.Sprintf("/proc/%d/mem", os.Getpid())))
		t.Logf("the host's memory: %s", res)
		return succeeded(res)
	}},
	// Sandboxed, the launcher is pid 1 of the plugin's namespace, of the plugin's user: its
	// memory, written, would let the plugin cut its lifeline. Without the sandbox pid 1 is the
	// machine's init, out of reach as ever.
	{name: "OpenTheLaunchersMemory", offEscapes: func(*hostileWorld) bool { return false }, try: func(t *testing.T, w *hostileWorld, h *pluginhost.Host, _ pluginhost.SandboxMode) bool {
		res, _ := attack(t, h, attackArgs("open", "/proc/1/mem"))
		t.Logf("pid 1's memory: %s", res)
		return succeeded(res)
	}},
	{name: "ReadTheUsersCredentials", offEscapes: unlessRoot, try: readFile(func(w *hostileWorld) string { return w.credentials })},
	{name: "ReadTheDataFolder", offEscapes: unlessRoot, try: readFile(func(w *hostileWorld) string { return w.dataFile })},
	{name: "ReplaceAnotherPluginsManifest", offEscapes: unlessRoot, try: func(t *testing.T, w *hostileWorld, h *pluginhost.Host, _ pluginhost.SandboxMode) bool {
		require.NoError(t, os.WriteFile(w.manifest, []byte(`{"name": "other"}`), 0o644))
		res, _ := attack(t, h, ar{"kind": "write", "target": w.manifest, "token": w.token})
		t.Logf("write %s: %s", w.manifest, res)
		b, err := os.ReadFile(w.manifest)
		require.NoError(t, err)
		return string(b) == w.token
	}},
	// Without the sandbox, under root, each plugin runs as a user of its own: it cannot read
	// another's environment. A user's plugins are that user's, as the user's own processes are.
	{name: "ReadAnotherPluginsSecret", offEscapes: unlessRoot, try: func(t *testing.T, w *hostileWorld, h *pluginhost.Host, mode pluginhost.SandboxMode) bool {
		// The next run's plugin, given a secret with --plugin-env.
		other := hostileHost(t, pluginhost.Options{Sandbox: mode, Env: []string{"API_KEY=" + w.token}})
		p, err := other.Start(context.Background(), spec("good"))
		require.NoError(t, err)
		defer p.Close()
		res, _ := attack(t, h, ar{"kind": "scan", "token": w.token})
		t.Logf("scan for the other plugin's secret: %s", truncated(res))
		return succeeded(res)
	}},
	// Fixed for every plugin, sandboxed or not: the launcher closes what the host inherited.
	{name: "ReadADescriptorTheHostInherited", offEscapes: func(*hostileWorld) bool { return false },
		try: func(t *testing.T, w *hostileWorld, h *pluginhost.Host, _ pluginhost.SandboxMode) bool {
			res, _ := attack(t, h, attackArgs("fd", strconv.Itoa(w.inheritedFD)))
			return strings.Contains(res, w.token)
		}},
	{name: "TypeIntoTheUsersTerminal", offEscapes: always, try: typesIntoTerminal},
	{name: "OpenAVsockSocket", offEscapes: func(w *hostileWorld) bool { return w.vsock },
		try: func(t *testing.T, w *hostileWorld, h *pluginhost.Host, _ pluginhost.SandboxMode) bool {
			res, _ := attack(t, h, attackArgs("vsock", ""))
			return succeeded(res)
		}},
	{name: "ConnectToTheAPIOverTCP", offEscapes: always, try: dialTCP(func(w *hostileWorld) string { return w.tcpLocal })},
	{name: "ConnectToAnotherAddressOverTCP", offEscapes: always, try: dialTCP(func(w *hostileWorld) string { return w.tcpOther })},
	{name: "SendTo127001OverUDP", offEscapes: always, try: sendUDP(func(w *hostileWorld) *net.UDPConn { return w.udpLocal })},
	{name: "SendToAnotherAddressOverUDP", offEscapes: always, try: sendUDP(func(w *hostileWorld) *net.UDPConn { return w.udpOther })},
	{name: "ReachAListenerThroughTheDialSocketWithoutAGrant", offEscapes: always, try: reach(nil, func(w *hostileWorld) string { return w.tcpLocal })},
	{name: "ReachAPortNotGranted", offEscapes: always, try: reach(grantGreeter, func(w *hostileWorld) string { return w.tcpLocal })},
	{name: "ReachTheGrantedPortByAnotherName", offEscapes: always, try: reach(grantGreeter, func(w *hostileWorld) string {
		_, port, _ := net.SplitHostPort(w.greeter)
		return "localhost:" + port
	})},
	{name: "ReachTheGrantedPortAgainstTheHostsPolicy", offEscapes: always, policy: &netpolicy.Policy{},
		try: reach(grantGreeter, func(w *hostileWorld) string { return w.greeter })},
	{name: "ASetsidChildOutlivesThePlugin", offEscapes: always, try: outlives("setsid")},
	{name: "APluginOutlivesItsKilledHost", offEscapes: always, try: outlivesKilledHost("orphan")},
	{name: "APluginExecutedAgainOutlivesItsKilledHost", offEscapes: always, try: outlivesKilledHost("reexec")},
	{name: "ADoubleForkedDaemonOutlivesThePlugin", offEscapes: always, try: outlives("daemon")},
	{name: "AForkBombGoesPastTheProcessLimit", offEscapes: unlessRoot,
		limits: pluginhost.Limits{AddressSpace: 4 << 30, OpenFiles: 1024, Processes: 64, Memory: 1 << 30, CPU: 1},
		try: func(t *testing.T, w *hostileWorld, h *pluginhost.Host, _ pluginhost.SandboxMode) bool {
			// Two bombs, the second while the first holds its processes. Without the sandbox, a
			// user's bomb has no bound at all (RLIMIT_NPROC would count the user's own processes);
			// under root each plugin runs as a user of its own, with a process limit of its own.
			// Were the limit shared, the second would get next to nothing, or not even start.
			const n = 200
			count := func(res string) int { c, _ := strconv.Atoi(strings.TrimPrefix(res, "ok: ")); return c }
			res, first := attack(t, h, ar{"kind": "forkbomb", "n": n, "token": randomToken(t)})
			t.Logf("first fork bomb: %s", res)
			require.NoError(t, exec.Command("true").Run(), "the host still starts processes")
			if count(res) == n {
				return true // no bound at all: a second bomb has nothing more to show
			}
			res2, err := tryAttack(t, h, ar{"kind": "forkbomb", "n": n, "token": randomToken(t)})
			t.Logf("second fork bomb: %s %v", res2, err)
			first.Close()
			return err != nil || count(res2) < count(res)/2
		}},
	{name: "AMemoryBombGoesPastTheMemoryLimit", offEscapes: always, needsCgroup: true,
		limits: pluginhost.Limits{AddressSpace: 4 << 30, OpenFiles: 1024, Processes: 256, Memory: 256 << 20, CPU: 1},
		try: func(t *testing.T, w *hostileWorld, h *pluginhost.Host, _ pluginhost.SandboxMode) bool {
			// Four processes of 128 MiB each: each within its address space, together twice
			// what the plugin may hold.
			res, p := attack(t, h, ar{"kind": "membomb", "n": 4, "mib": 128, "token": randomToken(t)})
			t.Logf("memory bomb: %s", res)
			good, err := h.Start(context.Background(), spec("good"))
			require.NoError(t, err, "the host starts another plugin after the bomb")
			good.Close()
			p.Close()
			return res == "ok: 4"
		}},
	// fallocate past a file's end is not bounded by the file size limit: refused in every
	// sandboxed mode with seccomp.
	{name: "ReserveTheHostsDiskWithFallocate", offEscapes: always, try: fillsSocketFolder(0, 0)},
	// Files within the limit, many of them: bounded in every sandboxed mode by the socket
	// folder's tmpfs, which the launcher mounts in the plugin's mount namespace.
	{name: "FillTheHostsDiskThroughTheSocketFolder", offEscapes: always, try: fillsSocketFolder(16, 128)},
	{name: "MakeANamespaceWithoutNoNewPrivsOrSeccomp", offEscapes: always, try: func(t *testing.T, w *hostileWorld, h *pluginhost.Host, mode pluginhost.SandboxMode) bool {
		res, p := attack(t, h, ar{"kind": "unshare"})
		t.Logf("unshare --user: %s", res)
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid()))
		require.NoError(t, err)
		if mode != pluginhost.SandboxOff {
			require.Regexp(t, `(?m)^NoNewPrivs:\s+1$`, string(status))
			require.Regexp(t, `(?m)^Seccomp:\s+2$`, string(status))
			require.Regexp(t, `(?m)^CapEff:\s+0+$`, string(status))
			require.Regexp(t, `(?m)^CapBnd:\s+0+$`, string(status))
		}
		return succeeded(res)
	}},
}

// TestHostilePlugins has a hostile plugin try each escape of the review twice: with the sandbox
// switched off, where the escapes the review found get through (so the test can fail), and
// sandboxed, where none does. It runs as whoever runs the tests; the tests below run it again
// as an ordinary user, beside this one: each host and plugin of theirs is their own.
func TestHostilePlugins(t *testing.T) {
	t.Parallel()
	w := newHostileWorld(t)
	t.Logf("running as uid %d", os.Geteuid())
	for _, c := range hostileCases {
		t.Run(c.name, func(t *testing.T) {
			t.Run("SandboxOff", func(t *testing.T) {
				h := hostileHost(t, pluginhost.Options{Sandbox: pluginhost.SandboxOff, Limits: c.limits, Targets: c.policy})
				require.Equal(t, c.offEscapes(w), c.try(t, w, h, pluginhost.SandboxOff),
					"without the sandbox the escape gets through: %t", c.offEscapes(w))
			})
			t.Run("Sandboxed", func(t *testing.T) {
				h := hostileHost(t, pluginhost.Options{Limits: c.limits, Targets: c.policy})
				sb := h.Sandbox()
				if sb.Namespaces != nil {
					t.Skipf("this machine cannot give plugins namespaces: %v", sb.Namespaces)
				}
				if c.needsCgroup && sb.Cgroup != nil {
					t.Skipf("this host can make no cgroup, which alone bounds the memory of several processes together: %v", sb.Cgroup)
				}
				require.False(t, c.try(t, w, h, pluginhost.SandboxAuto), "the sandbox stops the escape")
			})
		})
	}
}

// hostileHost is newHost with the launcher built for the tests (testdata/launcher), which starts
// far faster than this race-built test binary.
func hostileHost(t *testing.T, opts pluginhost.Options) *pluginhost.Host {
	t.Helper()
	opts.Launcher = testLauncher
	return newHost(t, opts)
}

// TestHostilePluginsAsAnOrdinaryUser runs TestHostilePlugins in a copy of this test binary as
// nobody, in cgroups delegated to it (as an operator gives an agent's service one).
func TestHostilePluginsAsAnOrdinaryUser(t *testing.T) {
	runHostileAsNobody(t, true)
}

// TestHostilePluginsAsAnOrdinaryUserWithoutACgroup runs TestHostilePlugins' sandboxed half as
// nobody with no cgroup it may write: the host falls back, says so, and the escapes are stopped
// all the same, except the memory of several processes together, which only a cgroup bounds.
func TestHostilePluginsAsAnOrdinaryUserWithoutACgroup(t *testing.T) {
	runHostileAsNobody(t, false)
}

func runHostileAsNobody(t *testing.T, delegate bool) {
	if os.Geteuid() != 0 {
		t.Skip("the tests already run as an ordinary user: TestHostilePlugins ran as one")
	}
	t.Parallel()
	nobody, err := user.Lookup("nobody")
	require.NoError(t, err)
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)

	// Copies nobody can run: the test binary and the plugin may lie in root's folders.
	dir, err := os.MkdirTemp("", "pluginhost-nobody-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	exe, err := os.Executable()
	require.NoError(t, err)
	copyExecutable(t, exe, filepath.Join(dir, "pluginhost.test"))
	copyExecutable(t, testPlugin, filepath.Join(dir, "testplugin"))
	copyExecutable(t, testLauncher, filepath.Join(dir, "launcher"))

	secret := randomToken(t)
	env := withLauncherEnv([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "TMPDIR=/tmp",
		testPluginEnv + "=" + filepath.Join(dir, "testplugin"), testLauncherEnv + "=" + filepath.Join(dir, "launcher"),
		hostSecretEnv + "=" + secret})
	var cgroups []string
	if delegate {
		cgroups = delegateCgroups(t, uid, gid)
	}
	env = append(env, delegatedCgroups+"="+strings.Join(cgroups, " "), fmt.Sprintf("%s=%d", expectFullEnv, map[bool]int{true: 1}[delegate]))
	// The shell moves itself into the delegated cgroups (as nobody, into folders nobody owns),
	// then becomes the test binary.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := "^(TestHostilePlugins|TestRequireSandbox)$"
	if !delegate {
		// A host without the sandbox makes no cgroup: the cases' SandboxOff half is the same
		// with a cgroup delegated or without, and ran in the other test.
		run += "/.*/^Sandboxed$"
	}
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c",
		`for d in $`+delegatedCgroups+`; do echo $$ > "$d/cgroup.procs" || exit 97; done; exec "$@"`, "sh",
		filepath.Join(dir, "pluginhost.test"), "-test.run="+run, "-test.v", "-test.count=1")
	cmd.Env = env
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	t.Logf("TestHostilePlugins as nobody:\n%s", out)
	require.NoError(t, err, "what the failing tests printed:\n%s", failures(string(out)))
	require.Contains(t, string(out), "running as uid "+nobody.Uid)
	require.Regexp(t, `(?m)^--- PASS: TestHostilePlugins `, string(out))
	require.Regexp(t, `(?m)^--- PASS: TestRequireSandbox `, string(out))
	skips := regexp.MustCompile(`(?m)^\s*--- SKIP: (\S+)`).FindAllStringSubmatch(string(out), -1)
	var skipped []string
	for _, s := range skips {
		skipped = append(skipped, s[1])
	}
	var want []string
	if !delegate {
		// Only a cgroup bounds the memory of several processes together.
		want = append(want, "TestHostilePlugins/AMemoryBombGoesPastTheMemoryLimit/Sandboxed")
	}
	require.ElementsMatch(t, want, skipped, "only what needs a cgroup is skipped")
}

// failures is what each failing test printed in verbose output: from its "=== RUN" to the next
// test's, so that the reason stays in sight where the whole output is cut.
func failures(out string) string {
	var b strings.Builder
	for _, m := range regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`).FindAllStringSubmatch(out, -1) {
		start := strings.Index(out, "=== RUN   "+m[1]+"\n")
		if start < 0 {
			continue
		}
		section := out[start:]
		if end := strings.Index(section[1:], "=== RUN"); end >= 0 {
			section = section[:end+1]
		}
		b.WriteString(section)
	}
	return b.String()
}

func copyExecutable(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}

// delegateCgroups makes a cgroup in each of this process's v1 hierarchies (memory, pids, cpu)
// that the user owns, as an operator delegates one to a service, and removes them at the end.
func delegateCgroups(t *testing.T, uid, gid int) []string {
	t.Helper()
	own, err := pluginhost.OwnCgroupDirs()
	require.NoError(t, err)
	if len(own) == 0 {
		t.Skip("no cgroup v1 hierarchy to delegate from (a v2-only host delegates with systemd's Delegate=yes)")
	}
	var dirs []string
	for _, base := range own {
		dir := filepath.Join(base, "pluginhost-test-"+randomToken(t))
		require.NoError(t, os.Mkdir(dir, 0o755))
		t.Cleanup(func() { removeCgroupTree(dir) })
		for _, f := range []string{"", "cgroup.procs", "tasks"} {
			require.NoError(t, os.Chown(filepath.Join(dir, f), uid, gid))
		}
		dirs = append(dirs, dir)
	}
	return dirs
}

// removeCgroupTree removes a cgroup and those below it, deepest first.
func removeCgroupTree(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			removeCgroupTree(filepath.Join(dir, e.Name()))
		}
	}
	_ = os.Remove(dir)
}
