//go:build !amd64 && !arm64

package pluginhost

import "golang.org/x/sys/unix"

// auditArch is zero where Barrage carries no filter: plugins there run without one, and the
// host says so.
const auditArch = 0

var archSyscallCheck []unix.SockFilter

var archDeniedSyscalls []uintptr
