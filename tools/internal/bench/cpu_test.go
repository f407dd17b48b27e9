package bench

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"testing/fstest"
)

func TestParseCPU(t *testing.T) {
	stat := []byte("cpu  100 5 50 800 40 3 2 10 7 0\ncpu0 50 2 25 400 20 1 1 5 3 0\nintr 1 2 3\n")
	got, ok := parseCPU(stat)
	// busy: user, nice, system, irq, softirq, steal; guest is in user.
	if want := (CPUTimes{Busy: 100 + 5 + 50 + 3 + 2 + 10, Total: 100 + 5 + 50 + 800 + 40 + 3 + 2 + 10}); !ok || got != want {
		t.Errorf("parseCPU = %+v, %v, want %+v", got, ok, want)
	}
	// Old kernels print fewer fields.
	if got, ok := parseCPU([]byte("cpu  10 0 10 80\n")); !ok || got != (CPUTimes{Busy: 20, Total: 100}) {
		t.Errorf("four fields: %+v, %v", got, ok)
	}
	for _, bad := range []string{"", "intr 1 2 3 4 5\n", "cpu  1 2 x 4 5\n", "cpu  1 2\n"} {
		if _, ok := parseCPU([]byte(bad)); ok {
			t.Errorf("parseCPU(%q) accepted", bad)
		}
	}
}

func TestParseProcessTicks(t *testing.T) {
	// The command may hold spaces and parentheses; utime 1500, stime 300.
	stat := []byte("4242 (bench (x) y) S 1 4242 4242 0 -1 4194560 9000 0 0 0 1500 300 0 0 20 0 12 0 100 1000000 500\n")
	if got, ok := parseProcessTicks(stat); !ok || got != 1800 {
		t.Errorf("parseProcessTicks = %d, %v, want 1800", got, ok)
	}
	for _, bad := range []string{"", "4242 (x) S 1 2", "4242 (x) S 1 2 3 4 5 6 7 8 9 10 x 0"} {
		if _, ok := parseProcessTicks([]byte(bad)); ok {
			t.Errorf("parseProcessTicks(%q) accepted", bad)
		}
	}
}

func TestBusyFraction(t *testing.T) {
	a := CPUTimes{Busy: 100, Total: 400, Process: 10}
	if busy, process, ok := BusyFraction(a, CPUTimes{Busy: 175, Total: 500, Process: 35}); !ok || busy != 0.75 || process != 0.25 {
		t.Errorf("BusyFraction = %v, %v, %v, want 0.75, 0.25", busy, process, ok)
	}
	if _, _, ok := BusyFraction(a, a); ok {
		t.Error("no tick passed, yet a fraction")
	}
	if f, ok := ReadCPU(); ok && (f.Busy > f.Total || f.Process > f.Busy) {
		t.Errorf("ReadCPU = %+v: more busy ticks than ticks, or than the machine's", f)
	}
}

// A program's processes are found by their command, the main one alone,
// and read with its children; their ticks are summed over the processes
// the second reading holds: one started after the first reading counts
// whole, one gone by the second not at all.
func TestPeerProcessTicks(t *testing.T) {
	stat := func(parent int, ticks string) *fstest.MapFile {
		return &fstest.MapFile{Data: fmt.Appendf(nil, "1 (x y) S %d 1 1 0 -1 0 0 0 0 0 %s 0 0 20 0 1 0 1 1 1\n", parent, ticks)}
	}
	comm := func(c string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(c + "\n")} }
	proc := fstest.MapFS{
		"7/comm": comm("postgres"), "7/stat": stat(1, "100 20"), "7/task/7/children": {Data: []byte("9 10 3")},
		"9/comm": comm("postgres"), "9/stat": stat(7, "5 5"),
		"10/comm": comm("postgres"), "10/stat": stat(7, "1 0"),
		"8/comm": comm("redis-server"), "8/stat": stat(1, "1 1"),
		"self/comm": comm("postgres"),
		"stat":      {Data: []byte("cpu  1 2 3 4\n")},
	}
	pids := findProcesses(proc, "postgres")
	if !slices.Equal(pids, []int{7}) {
		t.Fatalf("findProcesses = %v, want the postmaster alone, [7]", pids)
	}
	before := processTicks(proc, pids) // its child 3 is gone
	if want := map[int]uint64{7: 120, 9: 10, 10: 1}; !maps.Equal(before, want) {
		t.Errorf("processTicks = %v, want %v", before, want)
	}
	after := map[int]uint64{7: 150, 9: 10, 11: 5} // 10 ended, 11 started
	if got := ticksBetween(before, after); got != 35 {
		t.Errorf("ticksBetween = %d, want 30 + 5", got)
	}
	if got := findProcesses(proc, "nats-server"); len(got) != 0 {
		t.Errorf("no nats-server, yet %v", got)
	}
}
