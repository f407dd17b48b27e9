//go:build renamecheck

package repocheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/onceflow/onceflow/tools/internal/rename"
)

// TestRenamedCopy renames a full copy of the repository in a temporary
// directory, then builds it, vets it and runs its unit tests (-short), the
// root module and then tools/ (which requires the renamed root through its
// replace), as a fork would right after `make rename`. It compiles both
// modules a second time, under their new paths, so it runs with
// `make rename-check` (and in CI), not in `make test`.
func TestRenamedCopy(t *testing.T) {
	dir := copyTree(t, true)
	if _, err := rename.Tree(dir, forkOptions); err != nil {
		t.Fatal(err)
	}
	assertRenamed(t, dir)
	for _, module := range []string{".", "tools"} {
		for _, args := range [][]string{
			{"build", "./..."},
			{"vet", "./..."},
			{"test", "-short", "-count=1", "./..."},
		} {
			cmd := exec.Command("go", args...)
			cmd.Dir = filepath.Join(dir, module)
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
			t.Logf("go %v in %s", args, module)
			if err := cmd.Run(); err != nil {
				t.Fatalf("go %v in the renamed copy's %s: %v", args, module, err)
			}
		}
	}
}
