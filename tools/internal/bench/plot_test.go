package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestSplitLine(t *testing.T) {
	for b, want := range map[Backend][2]string{
		"kafka on": {"kafka", "on"}, "memory": {"memory", ""}, "redis store off": {"redis store", "off"},
	} {
		if g, v := splitLine(b); g != want[0] || v != want[1] {
			t.Errorf("splitLine(%q) = %q, %q, want %q", b, g, v, want)
		}
	}
}

// A sweep with pairs of lines and a line of no points is drawn.
func TestWritePlot(t *testing.T) {
	path := filepath.Join(t.TempDir(), PlotFile("s"))
	r := SweepResult{Name: "s", Axis: "messages in flight", Unit: "msg/s", Values: []int{1, 16, 256},
		Backends: []Backend{"kafka on", "kafka off", "nats on", "nats off", "memory"},
		Cells: map[Backend][]float64{
			"kafka on": {100, 800, 1600}, "kafka off": {1000, 1200, 1300},
			"nats on": {50, 400, 900}, "nats off": {0, 0, 0}, "memory": {5000, 4000, 3000},
		}}
	if err := WritePlot(r, "title", path); err != nil {
		t.Fatal(err)
	}
	png, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("plot: %v, want a PNG", err)
	}
}
