package pluginhost

import "golang.org/x/sys/unix"

const auditArch = unix.AUDIT_ARCH_X86_64

// x32 calls share the architecture's audit value: numbers with the x32 bit are refused.
var archSyscallCheck = []unix.SockFilter{
	{Code: bpfJumpGE, K: 0x40000000, Jt: 0, Jf: 1},
	{Code: bpfReturn, K: retKill},
}

var archDeniedSyscalls = []uintptr{unix.SYS_IOPL, unix.SYS_IOPERM}
