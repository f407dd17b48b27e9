package repocheck

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "write what the checks measure into the docs they check")

// libraryImports are what a Watermill service that takes the receiver as a
// library imports: the receiver's Watermill face (and with it the core) and
// one store.
var libraryImports = []string{
	"github.com/onceflow/onceflow/middleware/consume",
	"github.com/onceflow/onceflow/stores/redis",
}

// libraryFigure is the marked figure of docs/library.md.
var libraryFigure = regexp.MustCompile(`<!-- library-modules -->(.*?)<!-- /library-modules -->`)

// TestLibraryModuleGraph builds a module of its own that imports only the
// receiver and the Redis store, as a library user's would, and checks that
// docs/library.md states its module graph as measured (go test
// ./internal/repocheck -run LibraryModuleGraph -update writes it).
// TestLibraryCompilesNoBrokerClient checks what such a module compiles.
func TestLibraryModuleGraph(t *testing.T) {
	if testing.Short() {
		t.Skip("resolves a module graph with the go command")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/library\n\ngo 1.26.0\n\nrequire github.com/onceflow/onceflow v0.0.0\n\nreplace github.com/onceflow/onceflow => "+abs+"\n")
	var imports strings.Builder
	for _, p := range libraryImports {
		fmt.Fprintf(&imports, "\t_ %q\n", p)
	}
	write("main.go", "package main\n\nimport (\n"+imports.String()+")\n\nfunc main() {}\n")
	gocmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	gocmd("mod", "tidy")
	modules := len(strings.Fields(gocmd("list", "-m", "-f", "{{.Path}}", "all")))
	edges := strings.Count(gocmd("mod", "graph"), "\n")
	figure := fmt.Sprintf("%d modules in `go list -m all`, %d lines of `go mod graph`", modules, edges)
	t.Log(figure)
	page := filepath.Join(root, "docs", "library.md")
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	m := libraryFigure.FindSubmatch(b)
	if m == nil {
		t.Fatalf("docs/library.md has no <!-- library-modules --> figure")
	}
	if string(m[1]) == figure {
		return
	}
	if !*update {
		t.Fatalf("docs/library.md says %q, measured %q: write it with go test ./internal/repocheck -run LibraryModuleGraph -update (in tools/)", m[1], figure)
	}
	b = libraryFigure.ReplaceAll(b, []byte("<!-- library-modules -->"+figure+"<!-- /library-modules -->"))
	if err := os.WriteFile(page, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
