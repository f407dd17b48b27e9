package testenv

import (
	"syscall"
	"testing"
	"time"
)

// CPUTime is the CPU time this process has used so far: user and system,
// every goroutine and the garbage collector included. On a shared machine
// wall time moves with the other processes' load; CPU time much less, so
// benchmarks report it beside ns/op.
func CPUTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ReportCPU reports b's CPU time per op since start, a [CPUTime], as
// cpu-ns/op.
func ReportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(CPUTime(b)-start)/float64(b.N), "cpu-ns/op")
}
