//go:build examplecheck

package repocheck

import (
	"bytes"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// dropBroker deletes the broker kind from the tree at dir: the folder
// transport/<kind> and, in the non-test files of transport/ itself, the
// import of that folder's package and every switch clause, table entry or
// list element that names it. It fails the test unless it found the case
// to drop.
func dropBroker(t *testing.T, dir, kind string) {
	t.Helper()
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	path := modfile.ModulePath(gomod) + "/transport/" + kind
	if err := os.RemoveAll(filepath.Join(dir, "transport", kind)); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "transport", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	dropped := 0
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		n, err := dropImportUses(file, path)
		if err != nil {
			t.Fatal(err)
		}
		dropped += n
	}
	if dropped == 0 {
		t.Fatalf("transport/*.go import %s nowhere: no case to drop", path)
	}
}

// dropImportUses removes from file the import of path and each case
// clause, composite-literal element or statement that names its package,
// and reports how many it removed.
func dropImportUses(file, path string) (int, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
	if err != nil {
		return 0, err
	}
	name := ""
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == path {
			name = filepath.Base(p)
			if imp.Name != nil {
				name = imp.Name.Name
			}
		}
	}
	if name == "" {
		return 0, nil
	}
	names := func(n ast.Node) bool {
		found := false
		ast.Inspect(n, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == name {
					found = true
				}
			}
			return !found
		})
		return found
	}
	removed := 0
	keep := func(list []ast.Expr) []ast.Expr {
		var out []ast.Expr
		for _, e := range list {
			if names(e) {
				removed++
				continue
			}
			out = append(out, e)
		}
		return out
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			n.Elts = keep(n.Elts)
		case *ast.BlockStmt:
			var out []ast.Stmt
			for _, s := range n.List {
				if cc, ok := s.(*ast.CaseClause); ok && names(cc) {
					removed++
					continue
				}
				out = append(out, s)
			}
			n.List = out
		}
		return true
	})
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.IMPORT {
			continue
		}
		var specs []ast.Spec
		for _, s := range g.Specs {
			if p, _ := strconv.Unquote(s.(*ast.ImportSpec).Path.Value); p != path {
				specs = append(specs, s)
			}
		}
		g.Specs = specs
	}
	var buf bytes.Buffer
	if err := format.Node(&buf, fset, f); err != nil {
		return 0, err
	}
	return removed, os.WriteFile(file, buf.Bytes(), 0o644)
}
