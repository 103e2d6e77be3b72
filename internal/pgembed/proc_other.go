//go:build unix && !linux

package pgembed

import "syscall"

// sysProcAttr places postgres in a process group (or, detached, a session) of its own, so that a
// Ctrl-C meant for Barrage does not shut the database down under a server still draining
// requests. There is no parent-death signal outside Linux: a crash of Barrage leaves postgres
// running, and the next Start finds it in postmaster.pid.
func sysProcAttr(acct *account, detach bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Credential: acct.credential()}
	if detach {
		attr.Setsid = true
	} else {
		attr.Setpgid = true
	}
	return attr
}

// isPostmaster tells whether pid is alive; without /proc it cannot check that it is postgres.
func isPostmaster(pid int, pgdata string) bool {
	return pid > 0 && syscall.Kill(pid, 0) != syscall.ESRCH
}
