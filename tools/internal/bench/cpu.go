package bench

import (
	"bytes"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"
)

// ClockTick is the unit of the CPU times /proc reports: USER_HZ, a hundred
// a second on every architecture Linux runs Go on.
const ClockTick = 10 * time.Millisecond

// CPUTimes is the machine's CPU time so far, over all its cores, in the
// clock ticks of /proc/stat: Busy is every tick that was neither idle nor
// waiting on I/O (a tick the hypervisor stole counts as busy: no process
// here could use it), and Process the ticks this process ran, in user or
// system mode (/proc/self/stat). Two readings around a round tell how busy
// the machine was during it, and how much of that was this process (see
// [BusyFraction]).
type CPUTimes struct{ Busy, Total, Process uint64 }

// ReadCPU reads the machine's CPU times, and false where /proc/stat or
// /proc/self/stat cannot be read or parsed (on another system than Linux,
// say).
func ReadCPU() (CPUTimes, bool) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return CPUTimes{}, false
	}
	self, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return CPUTimes{}, false
	}
	t, ok := parseCPU(stat)
	if ok {
		t.Process, ok = parseProcessTicks(self)
	}
	return t, ok
}

// parseProcessTicks returns utime plus stime, the 14th and 15th fields of
// /proc/<pid>/stat; the second field, the command in parentheses, may
// hold spaces, so the fields are counted after its closing parenthesis.
func parseProcessTicks(stat []byte) (uint64, bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	fields := bytes.Fields(stat[i+1:]) // from the 3rd field on
	if len(fields) < 13 {
		return 0, false
	}
	var ticks uint64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseUint(string(f), 10, 64)
		if err != nil {
			return 0, false
		}
		ticks += n
	}
	return ticks, true
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
// reading b that was busy, and the share this process ran, each from 0 to
// 1, and false when no tick passed between them.
func BusyFraction(a, b CPUTimes) (busy, process float64, ok bool) {
	if b.Total <= a.Total || b.Busy < a.Busy || b.Process < a.Process {
		return 0, 0, false
	}
	total := float64(b.Total - a.Total)
	return min(1, float64(b.Busy-a.Busy)/total), min(1, float64(b.Process-a.Process)/total), true
}

// FindProcesses returns the PIDs of the processes on this machine whose
// command (/proc/<pid>/comm) is comm: another program's server, such as
// redis-server.
func FindProcesses(comm string) []int { return findProcesses(os.DirFS("/proc"), comm) }

func findProcesses(proc fs.FS, comm string) []int {
	entries, _ := fs.ReadDir(proc, ".")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := fs.ReadFile(proc, e.Name()+"/comm"); err == nil && strings.TrimSpace(string(b)) == comm {
			pids = append(pids, pid)
		}
	}
	return pids
}

// processTicks reads the CPU ticks each of pids ran so far, leaving out
// those that are gone.
func processTicks(proc fs.FS, pids []int) map[int]uint64 {
	ticks := make(map[int]uint64, len(pids))
	for _, pid := range pids {
		b, err := fs.ReadFile(proc, strconv.Itoa(pid)+"/stat")
		if err != nil {
			continue
		}
		if n, ok := parseProcessTicks(b); ok {
			ticks[pid] = n
		}
	}
	return ticks
}

// ticksBetween sums the ticks each process ran from reading a to reading
// b, over the processes both readings hold.
func ticksBetween(a, b map[int]uint64) uint64 {
	var sum uint64
	for pid, n := range b {
		if m, ok := a[pid]; ok && n >= m {
			sum += n - m
		}
	}
	return sum
}
