package pgembed

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// sysProcAttr places postgres in a process group of its own, so that a Ctrl-C meant for Barrage
// does not shut the database down under a server that is still draining requests; Barrage stops
// it afterwards. An attached server (the default) also gets a parent-death signal: should Barrage
// crash, postgres receives SIGINT and makes a fast shutdown instead of living on as an orphan.
// The kernel sends it when the thread that forked exits, which in Go is the process exiting,
// since the runtime only retires threads locked by LockOSThread. Go sets it after switching
// credentials, which would otherwise clear it. A detached server opens a session of its own and
// gets no such signal: it is meant to outlive this process.
func sysProcAttr(acct *account, detach bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Credential: acct.credential()}
	if detach {
		attr.Setsid = true
	} else {
		attr.Setpgid = true
		attr.Pdeathsig = syscall.SIGINT
	}
	return attr
}

// isPostmaster tells whether pid is a live postgres serving pgdata. A pid found in a stale
// postmaster.pid may have been reused by another program, typically in containers where pids
// restart low; postgres would then refuse to start, so such a pid counts as gone.
func isPostmaster(pid int, pgdata string) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return false
	}
	proc := "/proc/" + strconv.Itoa(pid)
	if stat, err := os.ReadFile(proc + "/stat"); err == nil {
		// The state follows the parenthesised command name, which may itself hold ") ".
		if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return false // exited, not yet reaped
		}
	}
	cmdline, err := os.ReadFile(proc + "/cmdline")
	if err != nil {
		return !os.IsNotExist(err) // cannot tell: assume alive rather than break a running server
	}
	argv0, _, _ := strings.Cut(string(cmdline), "\x00")
	if filepath.Base(argv0) != "postgres" {
		return false
	}
	// The postmaster's working folder is its data folder. Reading it needs the same uid or root;
	// when we cannot, the command name has to do.
	if cwd, err := os.Readlink(proc + "/cwd"); err == nil {
		return sameFile(cwd, pgdata)
	}
	return true
}
