package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/tools/internal/rename"
)

func TestRunRenamesTheDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module github.com/onceflow/onceflow\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A name of its own, also when this tree has been renamed.
	name := rename.FromName + "2"
	module := "example.com/" + name
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-dir", dir, "-module", module, "-name", name}, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	want := "renamed " + rename.FromName + " to " + name + " (" + module + "): 1 files changed or moved\n"
	if got := stdout.String(); got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "go.mod")); string(b) != "module "+module+"\n" {
		t.Errorf("go.mod = %q", b)
	}
}

func TestRunNamesTheBadOption(t *testing.T) {
	t.Parallel()
	err := run([]string{"-dir", t.TempDir(), "-module", "github.com/acme/orders"}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), `NAME ""`) {
		t.Fatalf("run without -name = %v, want an error naming NAME", err)
	}
}
