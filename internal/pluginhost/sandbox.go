package pluginhost

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// SandboxMode says how much of the kernel sandbox a host insists on.
type SandboxMode int

const (
	// SandboxAuto confines plugins with every primitive the host has, and says which it lacks.
	SandboxAuto SandboxMode = iota
	// SandboxRequire refuses to start a host that lacks any of the sandbox's primitives.
	SandboxRequire
	// SandboxOff leaves out the namespaces, the cgroup and the seccomp filter: plugins get the
	// older confinement only (no environment, rlimits, a user of its own under root, a process
	// group). It exists for tests that show what the sandbox stops.
	SandboxOff
)

// ErrSandboxUnavailable is returned by New under SandboxRequire when a primitive is missing.
var ErrSandboxUnavailable = errors.New("the plugin sandbox is not fully available")

// namespaceCloneFlags give a plugin its own user, PID, mount, network, IPC and UTS namespaces.
const namespaceCloneFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNS | unix.CLONE_NEWNET |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS

// Sandbox says which of the kernel's confinements a host gives its plugins. A nil error means
// the primitive holds; a non-nil one says why it is missing.
type Sandbox struct {
	// Namespaces: user, PID, mount, network, IPC and UTS namespaces, with a read-only view of
	// the system, a private /tmp and /proc, and no network.
	Namespaces error
	// Cgroup: a cgroup per plugin process with memory, process and CPU limits, killed whole.
	Cgroup error
	// CgroupKind names the cgroup version and controllers in use, as "v1 (memory, pids, cpu)".
	CgroupKind string
	// Seccomp: no_new_privs and a seccomp filter.
	Seccomp error
	// Off is set when the host was told to use no sandbox (SandboxOff).
	Off bool
	// SocketFolder says what bounds what a plugin puts in its socket folder, the one folder it
	// may write that the host reaches (see socketFolderBound); empty when the sandbox is off.
	SocketFolder string
}

// Full says whether every primitive holds.
func (s Sandbox) Full() bool {
	return !s.Off && s.Namespaces == nil && s.Cgroup == nil && s.Seccomp == nil
}

// Missing lists what is missing and what plugins fall back to, one sentence each.
func (s Sandbox) Missing() []string {
	if s.Off {
		return []string{"the sandbox is switched off: plugins run with rlimits, no environment and a process group only"}
	}
	var out []string
	if s.Namespaces != nil {
		out = append(out, fmt.Sprintf("no namespaces (%s): plugins see the host's files, processes and network as their user does (under root, each a user of its own)", oneLine(s.Namespaces)))
	}
	if s.Cgroup != nil {
		out = append(out, fmt.Sprintf("no cgroup (%s): memory is bounded per process (address space), processes per plugin by RLIMIT_NPROC (in its user namespace, or as a user of its own), CPU not at all", oneLine(s.Cgroup)))
	}
	if s.Seccomp != nil {
		out = append(out, fmt.Sprintf("no seccomp filter (%s)", oneLine(s.Seccomp)))
	}
	return out
}

// oneLine is an error's text on one line (errors.Join puts each on its own).
func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }

// String is one line for an operator: what holds, then what is missing.
func (s Sandbox) String() string {
	folder := ""
	if s.SocketFolder != "" {
		folder = "; socket folder: " + s.SocketFolder
	}
	if s.Full() {
		return "plugin sandbox: full (user, PID, mount, network and IPC namespaces; cgroup " + s.CgroupKind + "; no_new_privs and seccomp" + folder + ")"
	}
	return "plugin sandbox: partial: " + strings.Join(s.Missing(), "; ") + folder
}

// socketFolderBound says what bounds the files a plugin makes in its socket folder. In
// namespaces it is a tmpfs of its own in the plugin's mount namespace (see mountSocketFolder),
// whoever the host runs as. Without them (the fallback) it is a folder in the host's run dir, on
// the host's disk: each file bounded by RLIMIT_FSIZE, their number not at all. (go-plugin makes
// a regular file there before its socket, so the folder cannot be kept to sockets.) Under the
// seccomp filter fallocate, which RLIMIT_FSIZE does not bound, fails in any case.
func socketFolderBound(s Sandbox) string {
	if s.Off {
		return ""
	}
	b := "on the host's disk: each file bounded by the file size limit, their number not at all"
	if s.Namespaces == nil {
		b = fmt.Sprintf("a tmpfs of its own (%d KiB, %d inodes)", socketFolderSize>>10, socketFolderInodes)
	}
	if s.Seccomp == nil {
		b += ", fallocate refused"
	}
	return b
}

// launcherPath is the launcher's path: the one given, else this executable.
func launcherPath(launcher string) (string, error) {
	if launcher != "" {
		return launcher, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("plugin launcher: %w", err)
	}
	return exe, nil
}

// probeCache keeps the answer of the namespace probe per launcher: the kernel's answer does
// not change while a process runs.
var probeCache sync.Map // launcher path → *probeResult

type probeResult struct {
	once             sync.Once
	namespaces, secc error
}

// Probe says which sandbox primitives this machine gives the plugins of a host with these
// options, as a host started now would use them. `barrage agent` reports it at start.
func Probe(opts Options) (Sandbox, error) {
	launcher, err := launcherPath(opts.Launcher)
	if err != nil {
		return Sandbox{}, err
	}
	if opts.Sandbox == SandboxOff {
		return Sandbox{Off: true}, nil
	}
	as, err := pluginUser(opts.User)
	if err != nil {
		return Sandbox{}, err
	}
	s := probeNamespaces(launcher, as)
	cg, err := newCgroups(runDirPrefix+hostMarker()+"-probe", slog.New(slog.DiscardHandler))
	if err != nil {
		s.Cgroup = err
	} else {
		s.CgroupKind = cg.String()
		cg.remove()
	}
	s.SocketFolder = socketFolderBound(s)
	return s, nil
}

// probeNamespaces starts the launcher in probe mode, in the namespaces a plugin gets: it builds
// the whole view of the files, drops its privileges, installs the seccomp filter, and exits.
// The answer is cached.
func probeNamespaces(launcher string, as uidGid) Sandbox {
	v, _ := probeCache.LoadOrStore(fmt.Sprintf("%s:%d:%d", launcher, as.uid, as.gid), &probeResult{})
	r := v.(*probeResult)
	r.once.Do(func() { r.namespaces, r.secc = runProbe(launcher, as) })
	return Sandbox{Namespaces: r.namespaces, Seccomp: r.secc}
}

func runProbe(launcher string, as uidGid) (namespaces, secc error) {
	if auditArch == 0 {
		secc = errors.New("no filter for this architecture")
	} else if b, err := os.ReadFile("/proc/self/status"); err != nil || !bytes.Contains(b, []byte("\nSeccomp:")) {
		secc = errors.New("the kernel has no seccomp")
	}
	dir, err := os.MkdirTemp("", "barrage-sandbox-probe-")
	if err != nil {
		return err, secc
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o711); err != nil {
		return err, secc
	}
	// The probe's plugin is an empty file: something to bind where the plugin goes.
	plugin := filepath.Join(dir, "plugin")
	if err := os.WriteFile(plugin, nil, 0o555); err != nil {
		return err, secc
	}
	l := launchFlags{probe: true, seccomp: secc == nil, path: plugin}
	cmd, sync, err := sandboxCommand(launcher, &l, dir, as, true, true)
	if err != nil {
		return err, secc
	}
	defer sync.Close()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Start()
	closeExtraFiles(cmd)
	if err != nil {
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EPERM) {
			// What clone says when user namespaces are switched off or used up.
			err = fmt.Errorf("user namespaces are switched off or at their limit (sysctl user.max_user_namespaces; "+
				"kernel.unprivileged_userns_clone on some kernels): %w", err)
		}
		return fmt.Errorf("start a process in new namespaces: %w", err), secc
	}
	_, _ = sync.Write([]byte{1})
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		err = <-done
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return errors.New(strings.TrimPrefix(msg, "barrage plugin launcher: ")), secc
	}
	return nil, secc
}

// uidGid is the host's user and group a plugin runs as: -1 keeps the host's own.
type uidGid struct{ uid, gid int }

// sandboxCommand prepares the launcher's command for a plugin. It prepares the folder under dir
// that the launcher needs (the mount point of the new root),
// passes the launcher its own binary as file descriptor 3 (it runs as the plugin's user, who
// may not be able to reach the binary by its path) and one end of a socket pair as descriptor
// 4: the launcher waits for a byte on it before it does anything, so that the host can put it
// in its cgroup first; a supervising launcher holds it as its lifeline, and reports on it how the
// plugin ended (see supervise). The launcher starts a session of its own unless session is false
// (the sandbox is off). It returns the command and the host's end of the pair.
func sandboxCommand(launcher string, l *launchFlags, dir string, as uidGid, namespaces, session bool) (*exec.Cmd, *os.File, error) {
	exe, err := os.Open(launcher)
	if err != nil {
		return nil, nil, fmt.Errorf("plugin launcher: %w", err)
	}
	// A socket pair rather than a pipe: the launcher says on it, at the end, how the plugin
	// ended, where the plugin (which shares its standard streams and may exit with any status)
	// cannot speak for it.
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		_ = exe.Close()
		return nil, nil, err
	}
	w, r := os.NewFile(uintptr(pair[0]), "launcher-sync"), os.NewFile(uintptr(pair[1]), "launcher-sync")
	l.exeFD, l.syncFD = 3, 4
	// A session of its own, so a process group too: the plugin has no controlling terminal,
	// and cannot type into the user's shell nor read from it. Without the sandbox, only the
	// process group of the older confinement.
	attr := &syscall.SysProcAttr{Setsid: session, Setpgid: !session}
	if namespaces {
		l.namespaces = true
		l.root = filepath.Join(dir, "root")
		if err := os.Mkdir(l.root, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			_, _, _ = exe.Close(), r.Close(), w.Close()
			return nil, nil, err
		}
		uid, gid := as.uid, as.gid
		if uid < 0 {
			uid, gid = os.Getuid(), os.Getgid()
		}
		root := os.Getuid() == 0
		// The launcher is root of its user namespace, which is the plugin's user outside: it
		// has every capability over its new namespaces and none over the host.
		attr.Cloneflags = namespaceCloneFlags
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}}
		// Root can drop its supplementary groups in the namespace; a user cannot, and keeps
		// its own.
		attr.GidMappingsEnableSetgroups = root
		attr.Credential = &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}, NoSetGroups: !root}
	} else {
		attr.Pdeathsig = syscall.SIGKILL
	}
	cmd := &exec.Cmd{Path: "/proc/self/fd/3", Args: append([]string{launcher}, l.args()...), SysProcAttr: attr}
	cmd.ExtraFiles = []*os.File{exe, r}
	return cmd, w, nil
}

// closeExtraFiles closes the host's copies of what the launcher inherited: after the start, or
// when it failed.
func closeExtraFiles(cmd *exec.Cmd) {
	for _, f := range cmd.ExtraFiles {
		_ = f.Close()
	}
}

// pluginUser is the host's user that plugins run as: the one named (else nobody) when the host
// is root, the host's own otherwise (-1).
func pluginUser(name string) (uidGid, error) {
	if os.Geteuid() != 0 {
		return uidGid{uid: -1, gid: -1}, nil
	}
	if name == "" {
		name = "nobody"
	}
	u, err := user.Lookup(name)
	if err != nil {
		return uidGid{}, fmt.Errorf("plugin user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return uidGid{uid: uid, gid: gid}, nil
}
