package repocheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"

	"github.com/onceflow/onceflow/tools/internal/rename"
)

// forkOptions is the fork both rename checks make: the first of these
// whose name differs from the tree's own (a renamed copy runs this test
// too).
var forkOptions = func() rename.Options {
	for _, o := range []rename.Options{
		{Module: "github.com/acme/orders", Name: "orders"},
		{Module: "github.com/acme/billing", Name: "billing"},
	} {
		if o.Name != rename.FromName {
			return o
		}
	}
	panic("unreachable")
}()

// TestRenameReachesEverything renames a copy of the repository's text files
// and requires that no mention of the old name is left, that the binary's
// directory moved, and that the metric prefix and compose names followed.
// (TestRenamedCopy, behind the renamecheck tag, also builds and tests it.)
func TestRenameReachesEverything(t *testing.T) {
	t.Parallel()
	dir := copyTree(t, false)
	if _, err := rename.Tree(dir, forkOptions); err != nil {
		t.Fatal(err)
	}
	assertRenamed(t, dir)
}

func assertRenamed(t *testing.T, dir string) {
	t.Helper()
	left, err := rename.Leftovers(dir, rename.FromName)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("%q still mentioned in %q", rename.FromName, left)
	}
	if _, err := os.Stat(filepath.Join(dir, "cmd", forkOptions.Name, "main.go")); err != nil {
		t.Errorf("the binary's main: %v", err)
	}
	name := forkOptions.Name
	for file, want := range map[string]string{
		"go.mod":                         "module " + forkOptions.Module + "\n",
		"middleware/metrics/observer.go": `"` + name + `_receiver_outcomes_total"`,
		"app/config.go":                  `envDefault:"` + name + `"`,
		"Dockerfile":                     "./cmd/" + name,
		"docker-compose.yml":             name + "-kafka:",
		"Makefile":                       "bin/" + name,
		"deploy/k8s/deployment.yaml":     "image: " + name + ":",
	} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Error(err)
			continue
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("%s does not contain %q", file, want)
		}
	}
	assertToolsRenamed(t, dir)
}

// assertToolsRenamed requires tools/go.mod to name the tools module under
// the fork's path and to require the fork's module from the directory
// above, as the tree's own tools/go.mod does with its module.
func assertToolsRenamed(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, "tools", "go.mod")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse(path, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	mod := forkOptions.Module
	if f.Module == nil || f.Module.Mod.Path != mod+"/tools" {
		t.Errorf("tools/go.mod: module %v, want %s/tools", f.Module, mod)
	}
	required := false
	for _, r := range f.Require {
		required = required || r.Mod.Path == mod
	}
	if !required {
		t.Errorf("tools/go.mod does not require %s", mod)
	}
	if len(f.Replace) != 1 || f.Replace[0].Old.Path != mod || f.Replace[0].New.Path != "../" {
		t.Errorf("tools/go.mod replaces %v, want %s => ../", f.Replace, mod)
	}
}
