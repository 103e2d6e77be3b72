package pluginhost

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// launchArg is the first argument that makes a Barrage binary act as the launcher of a plugin:
// it applies the plugin's resource limits and user to itself, then replaces itself with the
// plugin. Limits set before the exec bind the plugin from its first instruction, with no window
// in which it runs unbounded.
const launchArg = "__barrage-plugin-launch"

// init keeps a launcher's main goroutine on the process's main thread, where it started: the
// thread that forks the plugin is then the one whose children the host reads to find it
// (Process.Pid), and the one /proc/<pid>/status describes. Locked later, in main, the goroutine
// may already have moved to another thread (a preemption under load is enough).
func init() {
	if len(os.Args) >= 2 && (os.Args[1] == launchArg || os.Args[1] == execArg) {
		runtime.LockOSThread()
	}
}

// Launch acts as the plugin launcher when the process was started as one, and never returns
// then. Call it first thing in main (and in TestMain of tests that start plugins); it returns
// at once otherwise.
func Launch() {
	if len(os.Args) >= 2 && os.Args[1] == execArg {
		fmt.Fprintf(os.Stderr, "barrage plugin launcher: %v\n", execStage(os.Args[2:]))
		os.Exit(126)
	}
	if len(os.Args) < 2 || os.Args[1] != launchArg {
		return
	}
	// launch returns only when it failed: otherwise it became the plugin (or, probing, exited).
	fmt.Fprintf(os.Stderr, "barrage plugin launcher: %v\n", launch(os.Args[2:]))
	os.Exit(126)
}

// launchFlags are the launcher's arguments, written by launchArgs.
type launchFlags struct {
	limits   Limits
	uid, gid int
	parent   int
	path     string
	// cookie is go-plugin's magic cookie, handed to the plugin's environment only at the exec:
	// in the launcher's own environment it would switch on the SDK's stdout guard, which
	// belongs to the plugin, in the launcher (a Barrage binary links the SDK).
	cookie string

	// exeFD and syncFD are the launcher's own binary and the pipe on which the host says go
	// (see sandboxCommand); zero when absent.
	exeFD, syncFD int
	// namespaces: the launcher runs in new namespaces and builds the plugin's view of the
	// files in root (a mount point), with the extra read-only paths and, when the run grants
	// the plugin hosts, the host's dial socket dialSock in its socket folder.
	namespaces bool
	root       string
	dialSock   string
	paths      []string
	seccomp    bool
	// probe: set everything up, then exit instead of starting a plugin.
	probe bool
}

func (l *launchFlags) args() []string {
	a := append([]string{launchArg}, l.limits.args()...)
	a = append(a,
		fmt.Sprintf("-uid=%d", l.uid),
		fmt.Sprintf("-gid=%d", l.gid),
		fmt.Sprintf("-parent=%d", l.parent),
		fmt.Sprintf("-exe-fd=%d", l.exeFD),
		fmt.Sprintf("-sync-fd=%d", l.syncFD),
		fmt.Sprintf("-namespaces=%t", l.namespaces),
		"-root="+l.root,
		"-dial="+l.dialSock,
		fmt.Sprintf("-seccomp=%t", l.seccomp),
		fmt.Sprintf("-probe=%t", l.probe),
		"-cookie="+l.cookie,
	)
	for _, p := range l.paths {
		a = append(a, "-path="+p)
	}
	return append(a, "--", l.path)
}

func launch(args []string) error {
	// The parent-death signal is a property of the thread, and so is what x/sys/unix's raw
	// calls change: everything below, the exec included, happens on this one thread. The
	// credential calls of package syscall change every thread of the process.
	runtime.LockOSThread()
	l := launchFlags{uid: -1, gid: -1}
	fs := flag.NewFlagSet(launchArg, flag.ContinueOnError)
	l.limits.flags(fs)
	fs.IntVar(&l.uid, "uid", -1, "")
	fs.IntVar(&l.gid, "gid", -1, "")
	fs.IntVar(&l.parent, "parent", 0, "")
	fs.StringVar(&l.cookie, "cookie", "", "")
	fs.IntVar(&l.exeFD, "exe-fd", 0, "")
	fs.IntVar(&l.syncFD, "sync-fd", 0, "")
	fs.BoolVar(&l.namespaces, "namespaces", false, "")
	fs.StringVar(&l.root, "root", "", "")
	fs.StringVar(&l.dialSock, "dial", "", "")
	fs.BoolVar(&l.seccomp, "seccomp", false, "")
	fs.BoolVar(&l.probe, "probe", false, "")
	fs.Func("path", "", func(p string) error { l.paths = append(l.paths, p); return nil })
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("want one plugin path, got %q", fs.Args())
	}
	l.path = fs.Arg(0)

	// First the parent-death signal, then wait for the host's word: a host that died before
	// the signal was set has closed the pipe.
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("parent-death signal: %w", err)
	}
	if l.syncFD > 0 {
		var b [1]byte
		if n, _ := unix.Read(l.syncFD, b[:]); n != 1 {
			return errors.New("the host is gone")
		}
	}
	if l.exeFD > 2 {
		_ = unix.Close(l.exeFD)
	}
	if l.syncFD > 2 && !l.namespaces {
		_ = unix.Close(l.syncFD) // in namespaces, the launcher keeps it: see supervise
	}
	path := l.path
	if l.namespaces {
		if err := confine(&l); err != nil {
			return err
		}
		path = filepath.Join(sandboxPluginDir, filepath.Base(l.path))
	}
	if !l.namespaces {
		// (In namespaces the launcher stays: the limits are the plugin's, set by the
		// second stage it starts, so that they do not bound the launcher's own threads.)
		if err := setLimits(l.limits); err != nil {
			return err
		}
		if err := switchUser(l.uid, l.gid); err != nil {
			return err
		}
		// A change of user clears the parent-death signal: set it again, then make sure the
		// host did not die in between. (In a PID namespace the host is no parent to see.)
		if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
			return fmt.Errorf("parent-death signal: %w", err)
		}
		if l.parent != 0 && os.Getppid() != l.parent {
			return fmt.Errorf("the host (pid %d) is gone", l.parent)
		}
	}
	// A plugin is a batch worker: woken by a call, it waits for the generator to block rather
	// than preempting it. The policy holds for every thread the plugin starts.
	if err := schedBatch(0); err != nil {
		return err
	}
	if l.namespaces {
		if err := dropPrivileges(); err != nil {
			return err
		}
	} else if l.seccomp {
		if err := setNoNewPrivs(); err != nil {
			return err
		}
	}
	if l.seccomp {
		if err := installSeccomp(); err != nil {
			return err
		}
	}
	if l.namespaces {
		if err := clearCapabilities(); err != nil {
			return err
		}
	}
	if l.probe {
		os.Exit(0)
	}
	// Nothing of the host's goes through the exec but the standard streams: a descriptor the
	// host inherited without close-on-exec (a token file, a socket) would reach the plugin.
	if err := closeFromThree(); err != nil {
		return err
	}
	env := os.Environ()
	if l.cookie != "" {
		env = append(env, l.cookie)
	}
	var err error
	if l.namespaces {
		err = supervise(&l, path, env, l.syncFD)
	} else {
		err = syscall.Exec(path, []string{path}, env)
	}
	return execError(path, err, l.namespaces)
}

// execError says why the plugin at path could not be executed: a script whose interpreter the
// sandbox (when there is one) does not show is told so.
func execError(path string, err error, sandboxed bool) error {
	if errors.Is(err, syscall.ENOENT) && sandboxed {
		if interp := interpreter(path); interp != "" {
			return fmt.Errorf("%s's interpreter %s is not in the sandbox: let plugins see its folder (barrage --plugin-path DIR)", filepath.Base(path), interp)
		}
	}
	return fmt.Errorf("exec %s: %w", filepath.Base(path), err)
}

// supervise starts the plugin as the launcher's child and stays, its PID namespace's init,
// until the plugin ends or the host does, and then exits, which ends every process of the
// namespace. The host's end is seen on the lifeline, the socket the host said go on: however
// the host ends, even killed with SIGKILL, its end of the pair closes. (A parent-death signal
// does not hold a plugin: it is set per thread, and a plugin that executes itself again from
// another thread sheds it.) The launcher's process is made non-dumpable first, so that the
// plugin, of the same user in the namespace and without capabilities, cannot read or write its
// memory through /proc. It reports how the plugin ended (its exit status, or the signal) on the
// lifeline, which the plugin does not hold.
func supervise(l *launchFlags, path string, env []string, lifeline int) error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("non-dumpable: %w", err)
	}
	// The plugin may signal its init, as it may its process group (kill 0, a shell's clean-up):
	// the launcher takes every signal it may take and does nothing with it, as tini does. Only
	// the host's SIGKILL ends it before the plugin.
	signals := make(chan os.Signal, 64)
	signal.Notify(signals)
	go func() {
		for range signals {
		}
	}()
	// From this thread, which holds the sandbox's credentials and filter: the child inherits
	// them. The child is the launcher's second stage (execStage), which sets the plugin's
	// limits and becomes the plugin: set here, they would bound the launcher's own threads (a
	// Go runtime reserves most of a gigabyte of address space).
	stage := append([]string{"/proc/self/exe", execArg}, l.limits.args()...)
	stage = append(stage, "-cookie="+l.cookie, "--", path)
	pid, err := syscall.ForkExec(stage[0], stage, &syscall.ProcAttr{Env: withoutCookie(env, l.cookie), Files: []uintptr{0, 1, 2}})
	if err != nil {
		return err
	}
	go func() {
		var b [1]byte
		for {
			n, err := unix.Read(lifeline, b[:])
			if n == 0 || (err != nil && !errors.Is(err, unix.EINTR)) {
				os.Exit(launcherHostGone)
			}
		}
	}()
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			os.Exit(launcherHostGone)
		case got != pid:
			continue // an orphan the plugin left, reaped as init does
		}
		// The host reads how the plugin ended here, where the plugin cannot write.
		how := fmt.Sprintf("exit %d\n", ws.ExitStatus())
		if ws.Signaled() {
			how = fmt.Sprintf("signal %d\n", int(ws.Signal()))
		}
		_, _ = unix.Write(lifeline, []byte(how))
		code := ws.ExitStatus()
		if ws.Signaled() {
			code = 1
		}
		os.Exit(code)
	}
}

// execArg starts the launcher's second stage: it sets the plugin's limits and becomes the
// plugin (see supervise).
const execArg = "__barrage-plugin-exec"

// execStage is the launcher's second stage: on its one thread, the plugin's resource limits,
// then the exec of the plugin with go-plugin's cookie (kept out of this Barrage binary's own
// environment, where it would switch on the SDK's stdout guard).
func execStage(args []string) error {
	runtime.LockOSThread()
	var lim Limits
	var cookie string
	fs := flag.NewFlagSet(execArg, flag.ContinueOnError)
	lim.flags(fs)
	fs.StringVar(&cookie, "cookie", "", "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("want one plugin path, got %q", fs.Args())
	}
	if err := setLimits(lim); err != nil {
		return err
	}
	path, env := fs.Arg(0), os.Environ()
	if cookie != "" {
		env = append(env, cookie)
	}
	return execError(path, syscall.Exec(path, []string{path}, env), true)
}

// withoutCookie is env without go-plugin's cookie.
func withoutCookie(env []string, cookie string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(e string) bool { return cookie != "" && e == cookie })
}

// launcherHostGone is the launcher's status when it ends its plugin because the host is gone.
const launcherHostGone = 125

// interpreter is the program a script's first line names, if it is a script.
func interpreter(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var b [256]byte
	n, _ := f.Read(b[:])
	line, ok := strings.CutPrefix(string(b[:n]), "#!")
	if !ok {
		return ""
	}
	line, _, _ = strings.Cut(line, "\n")
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return ""
	}
	return fields[0]
}

// args are lim as the launcher's flags (see flags), for both its stages.
func (lim Limits) args() []string {
	return []string{
		fmt.Sprintf("-as=%d", lim.AddressSpace),
		fmt.Sprintf("-nofile=%d", lim.OpenFiles),
		fmt.Sprintf("-fsize=%d", lim.FileSize),
		fmt.Sprintf("-nproc=%d", lim.Processes),
	}
}

// flags reads into lim what args wrote.
func (lim *Limits) flags(fs *flag.FlagSet) {
	fs.Uint64Var(&lim.AddressSpace, "as", 0, "")
	fs.Uint64Var(&lim.OpenFiles, "nofile", 0, "")
	fs.Uint64Var(&lim.FileSize, "fsize", 0, "")
	fs.Uint64Var(&lim.Processes, "nproc", 0, "")
}

// setLimits applies the resource limits that are set (non-zero).
func setLimits(lim Limits) error {
	for _, r := range []struct {
		res int
		v   uint64
	}{
		{unix.RLIMIT_AS, lim.AddressSpace},
		{unix.RLIMIT_NOFILE, lim.OpenFiles},
		{unix.RLIMIT_FSIZE, lim.FileSize},
		{unix.RLIMIT_NPROC, lim.Processes},
	} {
		if r.v == 0 {
			continue
		}
		if err := unix.Setrlimit(r.res, &unix.Rlimit{Cur: r.v, Max: r.v}); err != nil {
			return fmt.Errorf("setrlimit %d: %w", r.res, err)
		}
	}
	return nil
}

// switchUser makes the process the given user and group (-1: unchanged), with no supplementary
// group.
func switchUser(uid, gid int) error {
	if gid >= 0 {
		if err := syscall.Setgroups([]int{}); err != nil {
			return fmt.Errorf("setgroups: %w", err)
		}
		if err := syscall.Setresgid(gid, gid, gid); err != nil {
			return fmt.Errorf("setgid %d: %w", gid, err)
		}
	}
	if uid >= 0 {
		if err := syscall.Setresuid(uid, uid, uid); err != nil {
			return fmt.Errorf("setuid %d: %w", uid, err)
		}
	}
	return nil
}

// closeFromThree marks every descriptor from 3 up close-on-exec.
func closeFromThree() error {
	err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	// Before Linux 5.11: one at a time.
	entries, rerr := os.ReadDir("/proc/self/fd")
	if rerr != nil {
		return fmt.Errorf("close the host's descriptors: %w", errors.Join(err, rerr))
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC)
		}
	}
	return nil
}
