package pluginhost

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM in a sandboxed plugin: none is needed to serve hooks, and each
// is a door into the kernel or out of the sandbox (mounts, namespaces, tracing another process,
// keyrings, BPF, module and kexec loading, io_uring, perf). The plugin holds no capability, so
// most would fail anyway; the filter keeps their code in the kernel out of its reach.
var deniedSyscalls = append([]uintptr{
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT,
	unix.SYS_FSOPEN, unix.SYS_FSMOUNT, unix.SYS_FSCONFIG, unix.SYS_FSPICK, unix.SYS_MOVE_MOUNT,
	unix.SYS_OPEN_TREE, unix.SYS_MOUNT_SETATTR,
	unix.SYS_UNSHARE, unix.SYS_SETNS,
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_PIDFD_GETFD,
	unix.SYS_PROCESS_MADVISE,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD, unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE,
	unix.SYS_DELETE_MODULE,
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_ACCT, unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_REBOOT, unix.SYS_SYSLOG,
	unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT, unix.SYS_QUOTACTL,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_LOOKUP_DCOOKIE, unix.SYS_VHANGUP,
}, archDeniedSyscalls...)

// namespaceFlags are the clone flags that make a namespace: a plugin may start threads and
// processes, not namespaces.
const namespaceFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// socketFamilies are the address families a plugin may open sockets of: Unix (its gRPC and dial
// sockets), IPv4 and IPv6 (which its empty network namespace keeps in), and netlink (which Go
// and C libraries read interfaces with). Others (vsock, which no network namespace confines;
// packet, bluetooth...) fail with EAFNOSUPPORT.
var socketFamilies = []uint32{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK}

// Offsets in struct seccomp_data.
const (
	seccompNr       = 0
	seccompArch     = 4
	seccompArg0     = 16 // the low 32 bits of the first argument, on a little-endian machine
	seccompArg1     = 24 // the second's
	retAllow        = unix.SECCOMP_RET_ALLOW
	retEPERM        = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retENOSYS       = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	retEAFNOSUPPORT = unix.SECCOMP_RET_ERRNO | uint32(unix.EAFNOSUPPORT)
	retEOPNOTSUPP   = unix.SECCOMP_RET_ERRNO | uint32(unix.EOPNOTSUPP)
	retKill         = unix.SECCOMP_RET_KILL_PROCESS
	bpfLoadWord     = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	bpfJumpEqual    = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	bpfJumpSet      = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	bpfJumpGE       = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
	bpfReturn       = unix.BPF_RET | unix.BPF_K
)

// seccompFilter is the plugins' filter, in classic BPF: another architecture's calls kill the
// process; denied calls, clone with a namespace flag, the ioctls that fake a terminal's input
// and the prctl that would clear the parent-death signal fail with EPERM; fallocate with
// EOPNOTSUPP (see below); a socket of a family not in socketFamilies with EAFNOSUPPORT; clone3,
// whose flags a filter cannot read, with ENOSYS, which makes C libraries fall back to clone; the
// rest is allowed.
func seccompFilter() []unix.SockFilter {
	stmt := func(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
	jump := func(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: code, K: k, Jt: jt, Jf: jf}
	}
	f := []unix.SockFilter{
		stmt(bpfLoadWord, seccompArch),
		jump(bpfJumpEqual, auditArch, 1, 0),
		stmt(bpfReturn, retKill),
		stmt(bpfLoadWord, seccompNr),
	}
	f = append(f, archSyscallCheck...)
	for _, nr := range deniedSyscalls {
		f = append(f, jump(bpfJumpEqual, uint32(nr), 0, 1), stmt(bpfReturn, retEPERM))
	}
	// fallocate: RLIMIT_FSIZE does not bound it, so a plugin could reserve any amount of the
	// disk that holds a folder it may write (its socket folder lies in the host's run dir). It
	// fails as on a file system without it: C libraries' posix_fallocate then writes zeros,
	// which RLIMIT_FSIZE bounds.
	f = append(f, jump(bpfJumpEqual, unix.SYS_FALLOCATE, 0, 1), stmt(bpfReturn, retEOPNOTSUPP))
	// socket: only the families a plugin has use for.
	n := uint8(len(socketFamilies))
	f = append(f, jump(bpfJumpEqual, unix.SYS_SOCKET, 0, n+3), stmt(bpfLoadWord, seccompArg0))
	for i, fam := range socketFamilies {
		f = append(f, jump(bpfJumpEqual, fam, n-uint8(i), 0))
	}
	f = append(f, stmt(bpfReturn, retEAFNOSUPPORT), stmt(bpfReturn, retAllow))
	// prctl: no clearing the parent-death signal, by which a plugin (its PID namespace's init,
	// whose death ends every process in it) dies with its host, even one killed with SIGKILL.
	f = append(f,
		jump(bpfJumpEqual, unix.SYS_PRCTL, 0, 4), stmt(bpfLoadWord, seccompArg0),
		jump(bpfJumpEqual, unix.PR_SET_PDEATHSIG, 0, 1), stmt(bpfReturn, retEPERM), stmt(bpfReturn, retAllow),
	)
	// ioctl: no faking a terminal's input, nor its console's.
	f = append(f,
		jump(bpfJumpEqual, unix.SYS_IOCTL, 0, 5), stmt(bpfLoadWord, seccompArg1),
		jump(bpfJumpEqual, unix.TIOCSTI, 1, 0), jump(bpfJumpEqual, unix.TIOCLINUX, 0, 1),
		stmt(bpfReturn, retEPERM), stmt(bpfReturn, retAllow),
	)
	f = append(f,
		jump(bpfJumpEqual, unix.SYS_CLONE3, 0, 1), stmt(bpfReturn, retENOSYS),
		jump(bpfJumpEqual, unix.SYS_CLONE, 0, 3),
		stmt(bpfLoadWord, seccompArg0),
		jump(bpfJumpSet, namespaceFlags, 0, 1), stmt(bpfReturn, retEPERM),
		stmt(bpfReturn, retAllow),
	)
	return f
}

// installSeccomp applies the filter to the calling thread, which the exec hands to the plugin.
// no_new_privs must be set first.
func installSeccomp() error {
	if auditArch == 0 {
		return nil
	}
	filter := seccompFilter()
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog))); errno != 0 {
		return fmt.Errorf("seccomp: %w", errno)
	}
	return nil
}
