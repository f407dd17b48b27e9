// Package rename turns a copy of this repository into a service of its own:
// a new module path, binary name, metric prefix, service name, compose and
// Kubernetes names. `make rename` runs it through cmd/rename.
//
// The rewrite is textual over every text file, in one pass, with each form
// of the old name: the module path, then the name in lower, upper and title
// case. A name of lowercase letters and digits is valid in every place the
// name appears (binary, metric prefix, Redis key prefix, environment, DNS
// and Kubernetes names), so one form serves them all. Go files are then
// formatted, which sorts their imports under the new path. Files and
// directories named after the old name (cmd/onceflow) are moved. Binary
// files, .git and bin/ are left alone.
//
// The package's own FromName is rewritten too, so a renamed tree can be
// renamed again.
package rename

import (
	"bytes"
	"errors"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
)

// FromName is the name this tree carries.
const FromName = "onceflow"

// Options name the fork.
type Options struct {
	// Module is the new module path, e.g. github.com/acme/orders.
	Module string
	// Name is the new service name, e.g. orders: 1 to 40 lowercase letters
	// and digits, starting with a letter.
	Name string
}

var validName = regexp.MustCompile(`^[a-z][a-z0-9]{0,39}$`)

// Validate reports the first option a rename cannot use.
func (o Options) Validate() error {
	if err := module.CheckPath(o.Module); err != nil {
		return fmt.Errorf("MODULE %q: %w", o.Module, err)
	}
	if !validName.MatchString(o.Name) {
		return fmt.Errorf("NAME %q: want 1 to 40 lowercase letters and digits, starting with a letter (it names the binary, metrics, keys and Kubernetes objects)", o.Name)
	}
	return nil
}

// Tree renames the module rooted at dir in place and returns the paths,
// relative to dir, of the files it changed or moved.
func Tree(dir string, opts Options) ([]string, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return nil, err
	}
	from := modfile.ModulePath(gomod)
	if from == "" {
		return nil, errors.New("go.mod names no module")
	}
	r := newReplacer(from, opts)
	changed, err := rewriteFiles(dir, r)
	if err != nil {
		return changed, err
	}
	moved, err := moveNamed(dir, opts.Name)
	return append(changed, moved...), err
}

// newReplacer rewrites, at each position, the module path before the name
// it contains.
func newReplacer(from string, opts Options) *strings.Replacer {
	return strings.NewReplacer(
		from, opts.Module,
		FromName, opts.Name,
		strings.ToUpper(FromName), strings.ToUpper(opts.Name),
		title(FromName), title(opts.Name),
	)
}

func title(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// skipped reports whether a rename leaves the directory at rel (relative
// to the tree's root) alone: git's data and build output.
func skipped(rel string) bool { return rel == ".git" || rel == "bin" }

// Walk calls fn, in lexical order, for every path under dir that a rename
// looks at: all but .git and bin/ and what they hold. rel is path relative
// to dir.
func Walk(dir string, fn func(path, rel string, d os.DirEntry) error) error {
	return filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() && skipped(rel) {
			return filepath.SkipDir
		}
		return fn(path, rel, d)
	})
}

// rewriteFiles applies r to every text file under dir.
func rewriteFiles(dir string, r *strings.Replacer) ([]string, error) {
	var changed []string
	err := Walk(dir, func(path, rel string, d os.DirEntry) error {
		if !d.Type().IsRegular() {
			return nil
		}
		ok, err := rewriteFile(path, r)
		if ok {
			changed = append(changed, rel)
		}
		return err
	})
	return changed, err
}

// rewriteFile applies r to the file at path, unless it is binary, and
// formats it when it is Go. It reports whether the file changed.
func rewriteFile(path string, r *strings.Replacer) (bool, error) {
	old, text, err := ReadText(path)
	if err != nil || !text {
		return false, err
	}
	b := []byte(r.Replace(string(old)))
	if bytes.Equal(b, old) {
		return false, nil
	}
	if strings.HasSuffix(path, ".go") {
		if b, err = format.Source(b); err != nil {
			return false, fmt.Errorf("formatting %s: %w", path, err)
		}
	}
	info, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	return true, os.WriteFile(path, b, info.Mode().Perm())
}

// ReadText reads the file at path and reports whether it is text, judged
// as git does: no NUL byte in the first 8000 bytes.
func ReadText(path string) (content []byte, text bool, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false, err
	}
	return b, bytes.IndexByte(b[:min(len(b), 8000)], 0) < 0, nil
}

// moveNamed renames every file or directory whose name contains FromName,
// deepest first.
func moveNamed(dir, name string) ([]string, error) {
	var paths []string
	err := Walk(dir, func(path, _ string, d os.DirEntry) error {
		if strings.Contains(d.Name(), FromName) {
			paths = append(paths, path)
		}
		return nil
	})
	var moved []string
	for i := len(paths) - 1; i >= 0 && err == nil; i-- {
		p := paths[i]
		to := filepath.Join(filepath.Dir(p), strings.ReplaceAll(filepath.Base(p), FromName, name))
		if to == p {
			continue
		}
		err = os.Rename(p, to)
		rel, _ := filepath.Rel(dir, to)
		moved = append(moved, rel)
	}
	return moved, err
}
