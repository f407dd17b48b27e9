package testenv

import "syscall"

// DieWithParent makes the kernel kill a child process when the test process
// dies without cleaning up (a panic, or go test's -timeout).
func DieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
