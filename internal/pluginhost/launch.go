package pluginhost

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// launchArg is the first argument that makes a Barrage binary act as the launcher of a plugin:
// it applies the plugin's resource limits and user to itself, then replaces itself with the
// plugin. Limits set before the exec bind the plugin from its first instruction, with no window
// in which it runs unbounded.
const launchArg = "__barrage-plugin-launch"

// Launch acts as the plugin launcher when the process was started as one, and never returns
// then. Call it first thing in main (and in TestMain of tests that start plugins); it returns
// at once otherwise.
func Launch() {
	if len(os.Args) < 2 || os.Args[1] != launchArg {
		return
	}
	if err := launch(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "barrage plugin launcher: %v\n", err)
		os.Exit(126)
	}
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
}

func (l *launchFlags) args() []string {
	return []string{
		launchArg,
		fmt.Sprintf("-as=%d", l.limits.AddressSpace),
		fmt.Sprintf("-nofile=%d", l.limits.OpenFiles),
		fmt.Sprintf("-fsize=%d", l.limits.FileSize),
		fmt.Sprintf("-nproc=%d", l.limits.Processes),
		fmt.Sprintf("-uid=%d", l.uid),
		fmt.Sprintf("-gid=%d", l.gid),
		fmt.Sprintf("-parent=%d", l.parent),
		"-cookie=" + l.cookie,
		"--", l.path,
	}
}

func launch(args []string) error {
	// The parent-death signal is a property of the thread, and so is what x/sys/unix's raw
	// calls change: everything below, the exec included, happens on this one thread. The
	// credential calls of package syscall change every thread of the process.
	runtime.LockOSThread()
	var l launchFlags
	fs := flag.NewFlagSet(launchArg, flag.ContinueOnError)
	fs.Uint64Var(&l.limits.AddressSpace, "as", 0, "")
	fs.Uint64Var(&l.limits.OpenFiles, "nofile", 0, "")
	fs.Uint64Var(&l.limits.FileSize, "fsize", 0, "")
	fs.Uint64Var(&l.limits.Processes, "nproc", 0, "")
	fs.IntVar(&l.uid, "uid", -1, "")
	fs.IntVar(&l.gid, "gid", -1, "")
	fs.IntVar(&l.parent, "parent", 0, "")
	fs.StringVar(&l.cookie, "cookie", "", "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("want one plugin path, got %q", fs.Args())
	}
	l.path = fs.Arg(0)

	for _, r := range []struct {
		res int
		v   uint64
	}{
		{unix.RLIMIT_AS, l.limits.AddressSpace},
		{unix.RLIMIT_NOFILE, l.limits.OpenFiles},
		{unix.RLIMIT_FSIZE, l.limits.FileSize},
		{unix.RLIMIT_NPROC, l.limits.Processes},
	} {
		if r.v == 0 {
			continue
		}
		if err := unix.Setrlimit(r.res, &unix.Rlimit{Cur: r.v, Max: r.v}); err != nil {
			return fmt.Errorf("setrlimit %d: %w", r.res, err)
		}
	}
	if l.gid >= 0 {
		if err := syscall.Setgroups([]int{}); err != nil {
			return fmt.Errorf("setgroups: %w", err)
		}
		if err := syscall.Setresgid(l.gid, l.gid, l.gid); err != nil {
			return fmt.Errorf("setgid %d: %w", l.gid, err)
		}
	}
	if l.uid >= 0 {
		if err := syscall.Setresuid(l.uid, l.uid, l.uid); err != nil {
			return fmt.Errorf("setuid %d: %w", l.uid, err)
		}
	}
	// A change of user clears the parent-death signal: set it again, then make sure the host
	// did not die in between.
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("parent-death signal: %w", err)
	}
	if l.parent != 0 && os.Getppid() != l.parent {
		return fmt.Errorf("the host (pid %d) is gone", l.parent)
	}
	// A plugin is a batch worker: woken by a call, it waits for the generator to block rather
	// than preempting it. The policy holds for every thread the plugin starts.
	if err := schedBatch(0); err != nil {
		return err
	}
	env := os.Environ()
	if l.cookie != "" {
		env = append(env, l.cookie)
	}
	return syscall.Exec(l.path, []string{l.path}, env)
}
