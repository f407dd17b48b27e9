//go:build !linux

package testenv

import "syscall"

// dieWithParent has no portable equivalent outside Linux: there a child
// outlives a crashed test process.
func dieWithParent() *syscall.SysProcAttr { return nil }
