package bench

import (
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

// Processes are found by their command, and their ticks summed over those
// both readings hold: one gone by the second reading, or started after
// the first, is left out.
func TestPeerProcessTicks(t *testing.T) {
	stat := func(ticks string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte("1 (x) S 1 1 1 0 -1 0 0 0 0 0 " + ticks + " 0 0 20 0 1 0 1 1 1\n")}
	}
	proc := fstest.MapFS{
		"7/comm": {Data: []byte("postgres\n")}, "7/stat": stat("100 20"),
		"9/comm": {Data: []byte("postgres\n")}, "9/stat": stat("5 5"),
		"8/comm": {Data: []byte("redis-server\n")}, "8/stat": stat("1 1"),
		"self/comm": {Data: []byte("postgres\n")},
		"stat":      {Data: []byte("cpu  1 2 3 4\n")},
	}
	pids := findProcesses(proc, "postgres")
	if !slices.Equal(pids, []int{7, 9}) {
		t.Fatalf("findProcesses = %v, want [7 9]", pids)
	}
	before := processTicks(proc, append(pids, 3)) // 3 is gone
	if len(before) != 2 || before[7] != 120 || before[9] != 10 {
		t.Errorf("processTicks = %v", before)
	}
	after := map[int]uint64{7: 150, 9: 10, 11: 500}
	if got := ticksBetween(before, after); got != 30 {
		t.Errorf("ticksBetween = %d, want 30", got)
	}
	delete(after, 7)
	if got := ticksBetween(before, after); got != 0 {
		t.Errorf("with 7 gone: ticksBetween = %d, want 0", got)
	}
	if got := findProcesses(proc, "nats-server"); len(got) != 0 {
		t.Errorf("no nats-server, yet %v", got)
	}
}
