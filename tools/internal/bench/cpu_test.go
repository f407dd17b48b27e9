package bench

import "testing"

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

func TestBusyFraction(t *testing.T) {
	a := CPUTimes{Busy: 100, Total: 400}
	if f, ok := BusyFraction(a, CPUTimes{Busy: 175, Total: 500}); !ok || f != 0.75 {
		t.Errorf("BusyFraction = %v, %v, want 0.75", f, ok)
	}
	if _, ok := BusyFraction(a, a); ok {
		t.Error("no tick passed, yet a fraction")
	}
	if f, ok := ReadCPU(); ok && f.Busy > f.Total {
		t.Errorf("ReadCPU = %+v: more busy ticks than ticks", f)
	}
}
