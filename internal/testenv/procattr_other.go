//go:build !linux

package testenv

import "syscall"

// DieWithParent has no portable equivalent outside Linux: there a child
// outlives a crashed test process.
func DieWithParent() *syscall.SysProcAttr { return nil }
