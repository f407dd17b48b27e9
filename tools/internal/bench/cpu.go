package bench

import (
	"bytes"
	"os"
	"strconv"
)

// CPUTimes is the machine's CPU time so far, over all its cores, in the
// clock ticks of /proc/stat: Busy is every tick that was neither idle nor
// waiting on I/O (a tick the hypervisor stole counts as busy: no process
// here could use it). Two readings around a round tell how busy the
// machine was during it (see [BusyFraction]).
type CPUTimes struct{ Busy, Total uint64 }

// ReadCPU reads the machine's CPU times, and false where /proc/stat cannot
// be read or parsed (on another system than Linux, say).
func ReadCPU() (CPUTimes, bool) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return CPUTimes{}, false
	}
	return parseCPU(stat)
}

// parseCPU parses the line of /proc/stat that sums every core:
//
//	cpu  user nice system idle iowait irq softirq steal guest guest_nice
//
// guest and guest_nice are already counted in user and nice.
func parseCPU(stat []byte) (CPUTimes, bool) {
	line, _, _ := bytes.Cut(stat, []byte("\n"))
	fields := bytes.Fields(line)
	if len(fields) < 5 || string(fields[0]) != "cpu" {
		return CPUTimes{}, false
	}
	var t CPUTimes
	for i, f := range fields[1:min(len(fields), 9)] {
		n, err := strconv.ParseUint(string(f), 10, 64)
		if err != nil {
			return CPUTimes{}, false
		}
		t.Total += n
		if i != 3 && i != 4 { // idle, iowait
			t.Busy += n
		}
	}
	return t, true
}

// BusyFraction is the share of the machine's CPU time from reading a to
// reading b that was busy, from 0 to 1, and false when no tick passed
// between them.
func BusyFraction(a, b CPUTimes) (float64, bool) {
	if b.Total <= a.Total || b.Busy < a.Busy {
		return 0, false
	}
	return min(1, float64(b.Busy-a.Busy)/float64(b.Total-a.Total)), true
}
