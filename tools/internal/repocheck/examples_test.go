package repocheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// exampleBlock is a page's quote of an example: the marker names the file
// and the function, and the fenced block right after it quotes its lines.
var exampleBlock = regexp.MustCompile("(?s)<!-- example: (\\S+) (\\w+) -->\n```go\n(.*?)```")

// TestDocsQuoteExamples checks that every block a page marks as quoting an
// example is lines of that example's body, as they stand and in one run
// (the indentation aside): the example checks its output in go test, so a
// page that quotes it shows code that runs.
func TestDocsQuoteExamples(t *testing.T) {
	t.Parallel()
	quotes := 0
	for _, page := range docPages(t) {
		for _, m := range exampleBlock.FindAllStringSubmatch(readFile(t, page), -1) {
			quotes++
			file, name, block := m[1], m[2], m[3]
			body, ok := funcBody(t, file, name)
			if !ok {
				t.Errorf("%s quotes %s in %s, which has no such function", page, name, file)
				continue
			}
			if !containsRun(trimLines(body), trimLines(block)) {
				t.Errorf("%s quotes lines of %s (%s) that its body does not have in one run:\n%s", page, name, file, block)
			}
		}
	}
	if quotes == 0 {
		t.Error("no page quotes an example: has the marker changed?")
	}
}

// funcBody is the source of the body of function name in file, relative
// to the repository's root.
func funcBody(t *testing.T, file, name string) (string, bool) {
	t.Helper()
	src := readFile(t, filepath.ToSlash(file))
	f, err := parser.ParseFile(token.NewFileSet(), file, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == name && fn.Body != nil {
			return src[fn.Body.Lbrace : fn.Body.Rbrace-1], true
		}
	}
	return "", false
}

// trimLines is s's non-blank lines, each without its indentation.
func trimLines(s string) []string {
	var lines []string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// containsRun reports whether run appears in lines, in order and
// contiguous.
func containsRun(lines, run []string) bool {
	for i := 0; i+len(run) <= len(lines); i++ {
		if slices.Equal(lines[i:i+len(run)], run) {
			return true
		}
	}
	return len(run) == 0
}
