package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// binary is the onceflow binary built once per test process.
var binary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Build builds ./cmd/onceflow of the module rooted at moduleDir into a
// temporary directory, once per process, and returns the binary's path. It
// builds with the faults tag, so that CHAOS_* switch on the handler faults
// (package faults) that the production binary does not have.
// Call Cleanup after m.Run to remove it.
func Build(moduleDir string) (string, error) {
	binary.once.Do(func() {
		binary.dir, binary.err = os.MkdirTemp("", "onceflow-chaos-")
		if binary.err != nil {
			return
		}
		binary.path = filepath.Join(binary.dir, "onceflow")
		cmd := exec.Command("go", "build", "-tags", "faults", "-o", binary.path, "./cmd/onceflow")
		cmd.Dir = moduleDir
		if out, err := cmd.CombinedOutput(); err != nil {
			binary.err = fmt.Errorf("building onceflow: %w\n%s", err, out)
		}
	})
	return binary.path, binary.err
}

// Cleanup removes the binary Build made.
func Cleanup() {
	if binary.dir != "" {
		_ = os.RemoveAll(binary.dir)
	}
}
