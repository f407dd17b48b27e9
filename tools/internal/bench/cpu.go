package bench

import (
	"bytes"
	"io/fs"
	"os"
	"slices"
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
	fields := statFields(stat)
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

// statFields are the fields of /proc/<pid>/stat from the third on, after
// the command, nil when it has no command.
func statFields(stat []byte) [][]byte {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil
	}
	return bytes.Fields(stat[i+1:])
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
// command (/proc/<pid>/comm) is comm and whose parent's is not: a
// server's main process, such as redis-server, or PostgreSQL's
// postmaster, whose backends [processTicks] reads as its children.
func FindProcesses(comm string) []int { return findProcesses(os.DirFS("/proc"), comm) }

func findProcesses(proc fs.FS, comm string) []int {
	entries, _ := fs.ReadDir(proc, ".")
	parents := map[int]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := fs.ReadFile(proc, e.Name()+"/comm"); err != nil || strings.TrimSpace(string(b)) != comm {
			continue
		}
		parents[pid] = -1
		if b, err := fs.ReadFile(proc, e.Name()+"/stat"); err == nil {
			if f := statFields(b); len(f) > 1 {
				parents[pid], _ = strconv.Atoi(string(f[1]))
			}
		}
	}
	var pids []int
	for pid, parent := range parents {
		if _, ok := parents[parent]; !ok {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids
}

// processTicks reads the CPU ticks each of pids, and each child of its
// main thread, ran so far, leaving out those that are gone.
func processTicks(proc fs.FS, pids []int) map[int]uint64 {
	ticks := make(map[int]uint64, len(pids))
	read := func(pid string) {
		b, err := fs.ReadFile(proc, pid+"/stat")
		if err != nil {
			return
		}
		if n, ok := parseProcessTicks(b); ok {
			id, _ := strconv.Atoi(pid)
			ticks[id] = n
		}
	}
	for _, pid := range pids {
		p := strconv.Itoa(pid)
		read(p)
		children, _ := fs.ReadFile(proc, p+"/task/"+p+"/children")
		for _, child := range bytes.Fields(children) {
			read(string(child))
		}
	}
	return ticks
}

// ticksBetween sums the ticks the processes ran from reading a to reading
// b: a process b holds and a does not started between them, and all its
// ticks count; one gone by b is left out.
func ticksBetween(a, b map[int]uint64) uint64 {
	var sum uint64
	for pid, n := range b {
		if m := a[pid]; n >= m {
			sum += n - m
		}
	}
	return sum
}
