package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// servicePackage is the suite's service binary: the test domain behind the
// faults that CHAOS_* switch on.
const servicePackage = "github.com/onceflow/onceflow/tools/internal/chaos/faultservice"

// binary is the service binary built once per test process.
var binary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Build builds the suite's service binary (package faultservice) into a
// temporary directory, once per process, and returns its path. Call
// Cleanup after m.Run to remove it.
func Build() (string, error) {
	binary.once.Do(func() {
		binary.dir, binary.err = os.MkdirTemp("", "onceflow-chaos-")
		if binary.err != nil {
			return
		}
		binary.path = filepath.Join(binary.dir, "faultservice")
		if out, err := exec.Command("go", "build", "-o", binary.path, servicePackage).CombinedOutput(); err != nil {
			binary.err = fmt.Errorf("building %s: %w\n%s", servicePackage, err, out)
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
