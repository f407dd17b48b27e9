//go:build examplecheck

package repocheck

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestExampleDomainReplaced proves the seam between the service and its
// domain, as a fork would use it: in a copy of the repository it deletes
// handlers/ (the payments example), drops in the small shop domain of
// testdata/shop (one route, one HTTP endpoint, one migration), changes the
// one wiring line in cmd/onceflow, then builds everything and runs the
// shop's end-to-end test, which records each order once on the in-process
// transport and on NATS JetStream. It compiles the module a second time,
// so it runs with `make example-check` (and in CI), not in `make test`.
func TestExampleDomainReplaced(t *testing.T) {
	dir := copyTracked(t)
	if err := os.RemoveAll(filepath.Join(dir, "handlers")); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(dir, "handlers", "shop"), os.DirFS(filepath.Join("testdata", "shop"))); err != nil {
		t.Fatal(err)
	}
	wiring := filepath.Join(dir, "cmd", "onceflow", "domain.go")
	b, err := os.ReadFile(wiring)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.NewReplacer("handlers/payments", "handlers/shop", "payments.Domain()", "shop.Domain()").Replace(string(b))
	if changed == string(b) {
		t.Fatalf("%s does not pick the payments domain as this test expects:\n%s", wiring, b)
	}
	if err := os.WriteFile(wiring, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"build", "./..."},
		{"vet", "./cmd/...", "./domain/...", "./handlers/..."},
		{"test", "-count=1", "-v", "./handlers/..."},
	} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		t.Logf("go %v", args)
		if err := cmd.Run(); err != nil {
			t.Fatalf("go %v with the shop domain: %v", args, err)
		}
	}
}

// copyTracked copies the files git tracks, and the untracked ones it does
// not ignore, into a temporary directory, and returns it.
func copyTracked(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	dst := t.TempDir()
	for _, rel := range bytes.Split(bytes.TrimRight(out, "\x00"), []byte{0}) {
		src := filepath.Join(root, string(rel))
		info, err := os.Lstat(src)
		if err != nil || !info.Mode().IsRegular() {
			continue // deleted in the work tree, or a link
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dst, string(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}
