// Package k8s reads Kubernetes manifests for the checks that hold a
// deployment to the code it runs: the service's own (in tools/) and a
// domain's. It decodes the parts of the objects those checks read, and
// nothing it reads is applied anywhere.
package k8s

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// Manifest is one document of a manifest file.
type Manifest struct {
	File       string // relative to the directory [Read] was given
	Kind, Name string
	doc        yaml.Node
}

// Decode decodes the document into v, one of the types below.
func (m Manifest) Decode(t testing.TB, v any) {
	t.Helper()
	if err := m.doc.Decode(v); err != nil {
		t.Fatalf("%s: %s %q: %v", m.File, m.Kind, m.Name, err)
	}
}

// Read reads every document of every .yaml file under dirs (relative to
// base, in any directory below them), as `kubectl apply -R` does.
func Read(t testing.TB, base string, dirs ...string) []Manifest {
	t.Helper()
	var all []Manifest
	for _, dir := range dirs {
		err := filepath.WalkDir(filepath.Join(base, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
				return err
			}
			rel, err := filepath.Rel(base, p)
			if err != nil {
				return err
			}
			ms, err := documents(p, filepath.ToSlash(rel))
			all = append(all, ms...)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return all
}

// documents reads the documents of the file at path, named rel.
func documents(path, rel string) ([]Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ms []Manifest
	dec := yaml.NewDecoder(f)
	for {
		m := Manifest{File: rel}
		if err := dec.Decode(&m.doc); errors.Is(err, io.EOF) {
			return ms, nil
		} else if err != nil {
			return ms, fmt.Errorf("%s: %w", rel, err)
		}
		var obj struct {
			Kind     string   `yaml:"kind"`
			Metadata Metadata `yaml:"metadata"`
		}
		if err := m.doc.Decode(&obj); err != nil {
			return ms, fmt.Errorf("%s: %w", rel, err)
		}
		m.Kind, m.Name = obj.Kind, obj.Metadata.Name
		ms = append(ms, m)
	}
}

// Subset reports whether the selector sel, not empty, selects labels.
func Subset(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}
