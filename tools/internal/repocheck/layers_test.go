package repocheck

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

// A layer is a part of the layout README.md draws (Layout, "Imports flow
// one way"): its packages, by pattern relative to the module (a trailing
// /... takes the folder and everything below it), and the layers its
// non-test code may import, itself only where it says so.
type layer struct {
	name     string
	patterns []string
	imports  []string
}

// layers is the layout, top down. Test machinery (the last layer) is
// imported by tests and by other test machinery only.
var layers = []layer{
	{"cmd", []string{"cmd/..."}, []string{"app", "domain", "example"}},
	{"example", []string{"handlers/..."}, []string{"example", "domain", "faces", "receiver", "exactlyonce", "stores", "store", "migrations", "problem"}},
	{"app", []string{"app"}, []string{"admin", "poison", "poison stores", "domain", "faces", "unguarded", "receiver", "exactlyonce", "stores", "store", "transport", "broker", "migrations", "problem"}},
	{"admin", []string{"admin"}, []string{"poison", "faces", "receiver", "store", "problem"}},
	{"poison", []string{"poison"}, []string{"faces", "receiver", "store", "problem"}},
	{"poison stores", []string{"poison/..."}, []string{"poison", "faces", "receiver", "store"}},
	{"transport", []string{"transport"}, []string{"broker", "brokers"}},
	{"brokers", []string{"transport/..."}, []string{"broker"}},
	{"exactlyonce", []string{"exactlyonce"}, []string{"faces", "receiver", "stores", "store"}},
	{"faces", []string{"middleware", "middleware/consume", "middleware/idempotencykey", "middleware/apikey", "middleware/signing", "middleware/metrics", "middleware/tracecontext"}, []string{"faces", "unguarded", "receiver", "store", "problem"}},
	// The bench's switch that takes the receiver out of a whole service.
	{"unguarded", []string{"internal/unguarded"}, []string{"receiver", "store"}},
	{"receiver", []string{"middleware/receiver"}, []string{"store"}},
	{"domain", []string{"domain"}, nil},
	{"store", []string{"stores"}, nil},
	{"stores", []string{"stores/..."}, []string{"stores", "store", "migrations"}},
	{"migrations", []string{"migrations"}, nil},
	{"problem", []string{"problem"}, nil},
	{"test machinery", []string{"internal/testenv/...", "app/apptest/...", "stores/storetest/...", "poison/poisontest",
		"exactlyonce/exactlyoncetest", "middleware/internal/...", "transport/transporttest"}, nil},
}

// brokerLayer is what every broker shares (the transport's shape, and
// the SQL subscriber that the sql broker and the outbox relay both read
// with); it sits below every broker and imports nothing of the module
// but itself.
var brokerLayer = layer{"broker", []string{"transport/broker", "transport/sqlsubscriber"}, []string{"broker"}}

// layerOf returns the layer of pkg, a path relative to the module: test
// machinery first, wherever it sits, then the shared broker packages, then
// the first layer whose pattern matches.
func layerOf(pkg string) (layer, bool) {
	machinery := layers[len(layers)-1]
	if matches(machinery.patterns, pkg) {
		return machinery, true
	}
	if matches(brokerLayer.patterns, pkg) {
		return brokerLayer, true
	}
	for _, l := range layers {
		if matches(l.patterns, pkg) {
			return l, true
		}
	}
	return layer{}, false
}

func matches(patterns []string, pkg string) bool {
	for _, p := range patterns {
		if dir, ok := strings.CutSuffix(p, "/..."); ok {
			if pkg == dir || strings.HasPrefix(pkg, dir+"/") {
				return true
			}
		} else if pkg == p {
			return true
		}
	}
	return false
}

// goPackage is what go list -json says of a package.
type goPackage struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// listPackages runs go list -json over patterns in dir and returns the
// packages it lists.
func listPackages(t *testing.T, dir string, patterns ...string) []goPackage {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-e", "-json"}, patterns...)...)
	cmd.Dir = dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pkgs []goPackage
	dec := json.NewDecoder(out)
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("go list %v: %v", patterns, err)
	}
	return pkgs
}

// Imports flow one way: every package of the root module belongs to a
// layer of the layout, and its non-test code imports only the layers that
// layer may; test machinery is imported by tests and test machinery only.
// The tests of the packages a library user imports (the receiver, its
// faces, the stores, exactlyonce) import no broker client, so that a
// library user's go mod tidy, which loads them, finds none.
func TestImportsFlowOneWay(t *testing.T) {
	t.Parallel()
	module := modulePath(t)
	rel := func(p string) (string, bool) {
		if p == module {
			return ".", true
		}
		r, ok := strings.CutPrefix(p, module+"/")
		return r, ok && !strings.HasPrefix(r, "tools/")
	}
	for _, p := range listPackages(t, root, "./...") {
		pkg, _ := rel(p.ImportPath)
		from, ok := layerOf(pkg)
		if !ok {
			t.Errorf("%s belongs to no layer of the layout (layers_test.go): place it", pkg)
			continue
		}
		for _, imp := range p.Imports {
			dep, ours := rel(imp)
			if !ours || dep == pkg {
				continue
			}
			to, ok := layerOf(dep)
			switch {
			case !ok:
			case to.name == "test machinery" && from.name != "test machinery":
				t.Errorf("%s (%s) imports test machinery %s in non-test code", pkg, from.name, dep)
			case from.name == "test machinery":
			case !slices.Contains(from.imports, to.name):
				t.Errorf("%s (%s) imports %s (%s): the layout lets %s import %s only", pkg, from.name, dep, to.name, from.name, strings.Join(from.imports, ", "))
			}
		}
		if !libraryLayer(from.name) {
			continue
		}
		for _, imp := range slices.Concat(p.TestImports, p.XTestImports) {
			if isBrokerClient(imp) && !(from.name == "exactlyonce" && strings.HasPrefix(imp, watermillSQL)) {
				t.Errorf("the tests of %s import %s: a library user's go mod tidy would fetch it", pkg, imp)
			}
		}
	}
	for _, p := range listPackages(t, root, libraryTestClosure(t)...) {
		if isBrokerClient(p.ImportPath) {
			continue
		}
		for _, imp := range p.Imports {
			if isBrokerClient(imp) && !(strings.HasPrefix(imp, watermillSQL) && strings.HasSuffix(p.ImportPath, "/exactlyonce")) {
				t.Errorf("%s, which the library's packages or their tests import, imports %s", p.ImportPath, imp)
			}
		}
	}
}

// watermillSQL is the one broker client the library's exactlyonce, the
// PostgreSQL glue of transaction mode, is made of.
const watermillSQL = "github.com/ThreeDotsLabs/watermill-sql"

// libraryLayer reports whether a library user imports the layer's
// packages.
func libraryLayer(name string) bool {
	return slices.Contains([]string{"faces", "receiver", "exactlyonce", "stores", "store"}, name)
}

// libraryTestClosure lists the packages that the library's packages and
// their tests import, transitively (go list -deps -test).
func libraryTestClosure(t *testing.T) []string {
	t.Helper()
	args := []string{"list", "-deps", "-test", "-f", "{{.ImportPath}}"}
	for _, l := range layers {
		if libraryLayer(l.name) {
			for _, p := range l.patterns {
				args = append(args, "./"+p)
			}
		}
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	var pkgs []string
	for _, p := range strings.Fields(string(out)) {
		if !strings.Contains(p, " ") && !strings.HasSuffix(p, ".test") && !strings.Contains(p, "[") {
			pkgs = append(pkgs, p)
		}
	}
	return pkgs
}

func isBrokerClient(imp string) bool {
	for _, c := range brokerClients {
		if imp == c || strings.HasPrefix(imp, c+"/") {
			return true
		}
	}
	return false
}

// modulePath is the root module's path.
func modulePath(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// The layering check finds what it is there to find: a package placed
// nowhere, an import up the layout, test machinery in product code.
func TestLayersCatchWrongImports(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		from, to string
		allowed  bool
	}{
		{"cmd/onceflow", "app", true},
		{"app", "transport", true},
		{"middleware/consume", "middleware/receiver", true},
		{"middleware/receiver", "middleware/consume", false},
		{"middleware/receiver", "stores", true},
		{"stores", "middleware/receiver", false},
		{"domain", "middleware/consume", false},
		{"transport/kafka", "middleware/consume", false},
		{"transport/sql", "exactlyonce", false},
		{"transport/kafka", "transport/broker", true},
		{"transport/kafka", "transport/nats", false},
		{"transport", "transport/nats", true},
		{"middleware/idempotencykey", "middleware/apikey", true},
		{"app", "handlers/payments", false},
		{"app", "internal/testenv", false},
		{"handlers", "app", false},
	} {
		from, _ := layerOf(tc.from)
		to, ok := layerOf(tc.to)
		got := ok && slices.Contains(from.imports, to.name)
		if got != tc.allowed {
			t.Errorf("%s -> %s: allowed %v, want %v (%s -> %s)", tc.from, tc.to, got, tc.allowed, from.name, to.name)
		}
	}
	if _, ok := layerOf(path.Join("nowhere", "pkg")); ok {
		t.Error("a package outside the layout found a layer")
	}
}
