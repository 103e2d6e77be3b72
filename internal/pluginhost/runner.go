package pluginhost

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// procRunner runs a plugin process through the launcher, in a process group of its own (and
// its sandbox), for go-plugin (ClientConfig.RunnerFunc). It watches what go-plugin does not tell
// apart: what the plugin printed first, and how it ended.
type procRunner struct {
	cmd    *exec.Cmd
	name   string
	stdout io.ReadCloser
	stderr *stderrWatch
	// sync tells the launcher to go on, once it is in its cgroup; kept open while the plugin
	// runs, it is the launcher's lifeline: its end, however the host ends, ends the plugin.
	sync   *os.File
	cgroup *pluginCgroup // nil without one
	// sockDir is the plugin's socket folder on the host (go-plugin's), where a plugin without
	// namespaces serves. A sandboxed one serves in a folder of its own, sandboxSocketDir, a
	// tmpfs of its mount namespace that the host reaches through proc, the launcher's
	// /proc/PID, opened as it starts: it stays the launcher's whatever becomes of the number.
	// sockDir then holds the host's dial socket alone.
	sockDir   string
	sandboxed bool
	proc      *os.File
	// held are the sockets the plugin announced, opened without following links, that the
	// host dials through /proc/self/fd; they are closed when it ends.
	held []int
	// dialer serves the plugin's dial socket; nil when the run grants it no host. It ends
	// with the plugin.
	dialer *dialer

	mu        sync.Mutex
	firstLine string // the first line on stdout, the handshake if all is well
	gotLine   bool
	refused   error // why the address the plugin announced was refused, if it was
	exited    bool
	exitErr   error
	// done is closed once the process has been waited for (exited is set); nil in tests that
	// make a runner by hand.
	done     chan struct{}
	waitOnce sync.Once
	waitErr  error
}

func (r *procRunner) Start(context.Context) error {
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := r.cmd.StderrPipe()
	if err != nil {
		return err
	}
	err = r.cmd.Start()
	closeExtraFiles(r.cmd)
	if err != nil {
		_ = r.sync.Close()
		r.cgroup.remove()
		r.dialer.close()
		return err
	}
	// go-plugin does not wait for a runner whose start failed: what it holds is released here.
	if r.sandboxed {
		// Before anyone waits for the launcher: the number is its own until then.
		if r.proc, err = os.Open(fmt.Sprintf("/proc/%d", r.cmd.Process.Pid)); err != nil {
			_ = r.sync.Close()
			_ = r.Kill(context.Background())
			return fmt.Errorf("the plugin launcher's /proc: %w", err)
		}
	}
	if r.cgroup != nil {
		if err := r.cgroup.add(r.cmd.Process.Pid); err != nil {
			_ = r.sync.Close() // the launcher sees the host gone, and exits
			_ = r.Kill(context.Background())
			r.closeProc()
			return err
		}
	}
	_, err = r.sync.Write([]byte{1})
	if err != nil {
		_ = r.Kill(context.Background())
		r.closeProc()
		return fmt.Errorf("start the plugin launcher: %w", err)
	}
	// go-plugin reads stdout line by line for the handshake; keep a copy of the first line.
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReader(stdout)
		line, err := br.ReadString('\n')
		r.mu.Lock()
		r.firstLine, r.gotLine = strings.TrimRight(line, "\r\n"), line != ""
		r.mu.Unlock()
		if line != "" {
			if _, werr := pw.Write([]byte(line)); werr != nil {
				_ = pw.CloseWithError(werr)
				return
			}
		}
		if err != nil {
			_ = pw.CloseWithError(err)
			return
		}
		_, err = io.Copy(pw, br)
		_ = pw.CloseWithError(err)
	}()
	r.stdout, r.stderr = pr, &stderrWatch{r: stderr}
	return nil
}

func (r *procRunner) Wait(context.Context) error {
	r.waitOnce.Do(func() {
		r.waitErr = r.cmd.Wait()
		// The launcher has ended, and with it the last holder of its end of the pair: what it
		// reported of the plugin is there to read, or nothing.
		report, _ := io.ReadAll(io.LimitReader(r.sync, 64))
		_ = r.sync.Close()
		if ended := launcherReport(string(report)); ended != "" {
			r.waitErr = errors.New(ended)
		}
		// Whatever the plugin left behind ends with its cgroup, and its connections with it.
		r.cgroup.remove()
		r.dialer.close()
		r.mu.Lock()
		r.exited, r.exitErr = true, r.waitErr
		for _, fd := range r.held {
			_ = unix.Close(fd)
		}
		r.held = nil
		r.mu.Unlock()
		if r.done != nil {
			close(r.done)
		}
		r.closeProc()
	})
	return r.waitErr
}

// closeProc closes the launcher's /proc/PID: the launcher has ended, or will not start.
func (r *procRunner) closeProc() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc != nil {
		_ = r.proc.Close()
		r.proc = nil
	}
}

// Kill ends the plugin and anything it started: its process group, its cgroup, and (when it is
// the init of a PID namespace) every process of the namespace with it.
func (r *procRunner) Kill(context.Context) error {
	if r.cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	r.cgroup.kill()
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

func (r *procRunner) Diagnose(context.Context) string { return "" }
func (r *procRunner) Stdout() io.ReadCloser           { return r.stdout }
func (r *procRunner) Stderr() io.ReadCloser           { return r.stderr }
func (r *procRunner) Name() string                    { return r.name }

func (r *procRunner) ID() string {
	if r.cmd.Process == nil {
		return ""
	}
	return strconv.Itoa(r.cmd.Process.Pid)
}

// PluginToHost turns the address a plugin announces in its handshake into the one the host
// dials. The plugin chooses it, so it is held to what a plugin may serve on: a Unix socket in its
// own socket folder, and no link out of it. Any other address (a TCP one, another socket of the
// host's) would have the host connect, from its own network and with its own rights, where the
// plugin says, and send it every call.
func (r *procRunner) PluginToHost(network, addr string) (string, string, error) {
	network, addr, err := r.pluginToHost(network, addr)
	if err != nil {
		// go-plugin kills the plugin: keep why, or the host would tell of the kill alone.
		r.mu.Lock()
		r.refused = err
		r.mu.Unlock()
	}
	return network, addr, err
}

func (r *procRunner) pluginToHost(network, addr string) (string, string, error) {
	from := r.sockDir
	if r.sandboxed {
		from = sandboxSocketDir
	}
	name, ok := strings.CutPrefix(addr, from+"/")
	if network != "unix" || !ok || name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("the plugin announced %s %q: a plugin serves on a Unix socket in its socket folder", network, addr)
	}
	fd, err := r.openSocket(name)
	if err != nil {
		return "", "", fmt.Errorf("the plugin's socket %q: %w", name, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		_ = unix.Close(fd)
		return "", "", fmt.Errorf("the plugin announced %q, which is not a socket", name)
	}
	r.mu.Lock()
	r.held = append(r.held, fd)
	r.mu.Unlock()
	// The socket itself, whatever the plugin does to its name after.
	return "unix", "/proc/self/fd/" + strconv.Itoa(fd), nil
}

// openSocket opens the entry name of the plugin's socket folder, without following it if it is
// a link: sandboxed, in the launcher's root (/proc/PID/root), where the plugin sees it.
func (r *procRunner) openSocket(name string) (int, error) {
	const flags = unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC
	if !r.sandboxed {
		return unix.Open(filepath.Join(r.sockDir, name), flags, 0)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc == nil {
		return -1, errors.New("the plugin's launcher has ended")
	}
	return unix.Openat(int(r.proc.Fd()), filepath.Join("root", sandboxSocketDir, name), flags, 0)
}

// HostToPlugin would hand the plugin a socket of the host's (go-plugin's broker, which Barrage
// does not use): a sandboxed plugin sees none of the host's folders, so none is handed to it.
func (r *procRunner) HostToPlugin(network, addr string) (string, string, error) {
	if r.sandboxed && network == "unix" {
		return "", "", fmt.Errorf("a sandboxed plugin cannot reach the host's socket %s", addr)
	}
	return network, addr, nil
}

// launcherReport reads how a supervising launcher said the plugin ended ("exit 3", "signal 9")
// as exec.ExitError says it ("exit status 3", "signal: killed"); "" when it said nothing.
func launcherReport(s string) string {
	var n int
	if _, err := fmt.Sscanf(s, "exit %d\n", &n); err == nil {
		if n == 0 {
			return ""
		}
		return fmt.Sprintf("exit status %d", n)
	}
	if _, err := fmt.Sscanf(s, "signal %d\n", &n); err == nil {
		return "signal: " + syscall.Signal(n).String()
	}
	return ""
}

// observed reports the first line the plugin printed, why the address it announced was refused
// if it was, and how it ended, if it did.
func (r *procRunner) observed() (firstLine string, gotLine bool, refused error, exited bool, exitErr error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.firstLine, r.gotLine, r.refused, r.exited, r.exitErr
}
