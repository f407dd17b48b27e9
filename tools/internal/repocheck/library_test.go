package repocheck

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/version"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "write what the checks measure into the docs they check")

// libraryImports are what a Watermill service that takes the receiver as a
// library imports: the receiver's core, its Watermill face and one store.
var libraryImports = []string{
	"github.com/onceflow/onceflow/middleware/receiver",
	"github.com/onceflow/onceflow/middleware/consume",
	"github.com/onceflow/onceflow/stores/redis",
}

// TestLibraryModuleGraph builds a library user's module (see
// newLibraryModule) and checks that docs/library.md states its module
// graph and its go.sum as measured (go test ./internal/repocheck -run
// LibraryModuleGraph -update writes it).
func TestLibraryModuleGraph(t *testing.T) {
	m := newLibraryModule(t)
	modules := len(strings.Fields(m.goCmd("list", "-m", "-f", "{{.Path}}", "all")))
	edges := strings.Count(m.goCmd("mod", "graph"), "\n")
	figure := fmt.Sprintf("%d modules in `go list -m all`, %d lines of `go mod graph`, a go.sum of %d lines, %d of them module zips (%d fetched by `go mod download` to build it)",
		modules, edges, m.sumLines, len(m.zips), len(m.downloads()))
	t.Log(figure)
	checkLibraryFigure(t, "library-modules", "LibraryModuleGraph", figure, func(stated string) bool { return stated == figure })
}

// checkLibraryFigure checks docs/library.md's figure between the markers
// <!-- name --> and <!-- /name -->: it passes when same says the stated
// figure matches the measured one, and with -update writes the measured
// one; test names the test that does so.
func checkLibraryFigure(t *testing.T, name, test, figure string, same func(stated string) bool) {
	t.Helper()
	marker := regexp.MustCompile(`<!-- ` + name + ` -->(.*?)<!-- /` + name + ` -->`)
	page := filepath.Join(root, "docs", "library.md")
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	sub := marker.FindSubmatch(b)
	if sub == nil {
		t.Fatalf("docs/library.md has no <!-- %s --> figure", name)
	}
	if same(string(sub[1])) {
		return
	}
	if !*update {
		t.Fatalf("docs/library.md says %q, measured %q: write it with go test ./internal/repocheck -run %s -update (in tools/)", sub[1], figure, test)
	}
	b = marker.ReplaceAll(b, []byte("<!-- "+name+" -->"+figure+"<!-- /"+name+" -->"))
	if err := os.WriteFile(page, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A library user's module holds no broker client: its package compiles
// none, the zips its build fetches hold none, and its go.sum, which go mod
// tidy fills for the tests of the packages it imports too, has no zip of
// one (a go.mod line of one is the module graph only).
func TestLibraryModuleHoldsNoBrokerClient(t *testing.T) {
	m := newLibraryModule(t)
	downloads := m.downloads()
	const store = "github.com/redis/go-redis/v9" // what every list must hold: proof that it was read
	for what, list := range map[string][]string{
		"go list -deps":   strings.Fields(m.goCmd("list", "-deps", ".")),
		"go mod download": downloads,
		"go.sum's zips":   m.zips,
	} {
		if !slices.ContainsFunc(list, func(p string) bool { return strings.HasPrefix(p, store) }) {
			t.Errorf("%s lacks %s: %q", what, store, list)
		}
		for _, p := range list {
			if client, ok := brokerClient(p); ok {
				t.Errorf("%s of the library user's module holds %s (%s)", what, p, client)
			}
		}
	}
	for _, p := range downloads {
		if !slices.Contains(m.zips, p) {
			t.Errorf("go mod download fetched %s, whose zip go.sum does not hold", p)
		}
	}
}

// brokerClient reports the broker client that the package or module path
// p is, or is part of.
func brokerClient(p string) (string, bool) {
	for _, client := range brokerClients {
		if p == client || strings.HasPrefix(p, client+"/") {
			return client, true
		}
	}
	return "", false
}

// libraryModule is a module of a test's own that imports libraryImports
// alone, as a library user's would, the root module replacing its
// requirement, tidied.
type libraryModule struct {
	t   *testing.T
	dir string
	// sumLines and zips are what go mod tidy wrote to its go.sum: the
	// number of lines, and the modules whose zips they hold (the lines
	// not of a go.mod). Commands that read the whole graph add go.mod
	// lines after it.
	sumLines int
	zips     []string
}

func newLibraryModule(t *testing.T) libraryModule {
	t.Helper()
	if testing.Short() {
		t.Skip("resolves a module graph with the go command")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	m := libraryModule{t: t, dir: t.TempDir()}
	m.write("go.mod", "module example.com/library\n\ngo 1.26.0\n\nrequire github.com/onceflow/onceflow v0.0.0\n\nreplace github.com/onceflow/onceflow => "+abs+"\n")
	var imports strings.Builder
	for _, p := range libraryImports {
		fmt.Fprintf(&imports, "\t_ %q\n", p)
	}
	m.write("main.go", "package main\n\nimport (\n"+imports.String()+")\n\nfunc main() {}\n")
	m.goCmd("mod", "tidy")
	m.sumLines, m.zips = m.sum()
	return m
}

func (m libraryModule) write(name, text string) {
	m.t.Helper()
	if err := os.WriteFile(filepath.Join(m.dir, name), []byte(text), 0o644); err != nil {
		m.t.Fatal(err)
	}
}

// goCmd runs the go command in the module and returns its standard output.
func (m libraryModule) goCmd(args ...string) string {
	m.t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = m.dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		m.t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// sum returns the number of lines of the module's go.sum and the modules
// whose zips it holds, its lines of a module that are not of a go.mod.
func (m libraryModule) sum() (lines int, zips []string) {
	m.t.Helper()
	b, err := os.ReadFile(filepath.Join(m.dir, "go.sum"))
	if err != nil {
		m.t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		lines++
		if f := strings.Fields(line); len(f) == 3 && !strings.HasSuffix(f[1], "/go.mod") {
			zips = append(zips, f[0])
		}
	}
	return lines, zips
}

// downloads returns the modules whose zips go mod download fetches for
// the module: those its build needs.
func (m libraryModule) downloads() []string {
	m.t.Helper()
	dec := json.NewDecoder(strings.NewReader(m.goCmd("mod", "download", "-json")))
	var paths []string
	for {
		var mod struct{ Path, Error string }
		err := dec.Decode(&mod)
		if errors.Is(err, io.EOF) {
			return paths
		}
		if err != nil {
			m.t.Fatalf("reading go mod download -json: %v", err)
		}
		if mod.Error != "" {
			m.t.Fatalf("go mod download %s: %s", mod.Path, mod.Error)
		}
		paths = append(paths, mod.Path)
	}
}

// libraryUser is a Watermill program that takes the receiver on Redis
// with one Install; libraryBase is the same program without it.
const (
	libraryUser = `package main

import (
	"context"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/middleware/consume"
	"github.com/onceflow/onceflow/middleware/receiver"
	redisstore "github.com/onceflow/onceflow/stores/redis"
)

func main() {
	pubSub := gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{})
	router, err := message.NewRouter(message.RouterConfig{}, watermill.NopLogger{})
	if err != nil {
		panic(err)
	}
	router.AddConsumerHandler("charge", "payments", pubSub, func(*message.Message) error { return nil })
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	store, err := redisstore.New(rdb, redisstore.Config{})
	if err != nil {
		panic(err)
	}
	r, err := receiver.New(receiver.Config{Store: store})
	if err != nil {
		panic(err)
	}
	if err := consume.Install(router, consume.RouterConfig{Receiver: r}); err != nil {
		panic(err)
	}
	_ = router.Run(context.Background())
}
`
	libraryBase = `package main

import (
	"context"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"github.com/redis/go-redis/v9"
)

func main() {
	pubSub := gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{})
	router, err := message.NewRouter(message.RouterConfig{}, watermill.NopLogger{})
	if err != nil {
		panic(err)
	}
	router.AddConsumerHandler("charge", "payments", pubSub, func(*message.Message) error { return nil })
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	_ = rdb.Ping(context.Background())
	_ = router.Run(context.Background())
}
`
)

// unaskedPackages are what a library user that asks for no metrics and
// no traces must not link: Prometheus, OpenTelemetry's SDK and
// propagation, protobuf, and net/http, which propagation imports.
var unaskedPackages = []string{"github.com/prometheus/", "google.golang.org/protobuf", "go.opentelemetry.io/otel/sdk",
	"go.opentelemetry.io/otel/propagation", "net/http"}

// TestLibraryWeight builds libraryUser and libraryBase and checks that the
// user links nothing of unaskedPackages, and that docs/library.md states
// what the receiver adds to the program, as measured: the binary's size
// within sizeSlack (a patch of the toolchain moves it), the packages
// outside the standard library exactly (-update writes both).
func TestLibraryWeight(t *testing.T) {
	m := newLibraryModule(t)
	const sizeSlack = 0.05
	type build struct {
		size     int64
		packages []string // outside the standard library
	}
	measure := func(dir, src string) build {
		m.write(filepath.Join(dir, "main.go"), src)
		bin := filepath.Join(m.dir, dir, "bin")
		m.goCmd("build", "-o", bin, "./"+dir)
		info, err := os.Stat(bin)
		if err != nil {
			t.Fatal(err)
		}
		var pkgs []string
		for _, p := range strings.Fields(m.goCmd("list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./"+dir)) {
			if !strings.HasPrefix(p, "example.com/") {
				pkgs = append(pkgs, p)
			}
		}
		return build{info.Size(), pkgs}
	}
	for _, dir := range []string{"user", "base"} {
		if err := os.Mkdir(filepath.Join(m.dir, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	user, base := measure("user", libraryUser), measure("base", libraryBase)
	for _, p := range strings.Fields(m.goCmd("list", "-deps", "./user")) {
		for _, unasked := range unaskedPackages {
			if p == unasked || strings.HasPrefix(p, unasked) {
				t.Errorf("the library user links %s, which it does not ask for", p)
			}
		}
	}
	mb := func(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }
	figure := fmt.Sprintf("%s, %s more than the same program without it (%s); %d packages outside the standard library, %d more",
		mb(user.size), mb(user.size-base.size), mb(base.size), len(user.packages), len(user.packages)-len(base.packages))
	t.Log(figure)
	_, measuredRest, _ := strings.Cut(figure, "; ")
	checkLibraryFigure(t, "library-weight", "LibraryWeight", figure, func(stated string) bool {
		var size float64
		if _, err := fmt.Sscanf(stated, "%f MB,", &size); err != nil {
			return false
		}
		_, rest, _ := strings.Cut(stated, "; ")
		return math.Abs(size*1e6-float64(user.size)) <= sizeSlack*float64(user.size) && rest == measuredRest
	})
}

// TestGoDirectiveIsTheDependenciesLowest checks that the root go.mod asks
// for no newer Go than the modules a library user builds ask for: its go
// directive is the newest of theirs, so a library user needs no newer
// toolchain than the receiver's dependencies do.
func TestGoDirectiveIsTheDependenciesLowest(t *testing.T) {
	m := newLibraryModule(t)
	own := ""
	newest, by := "", ""
	for line := range strings.Lines(m.goCmd("list", "-deps", "-f", "{{with .Module}}{{.Path}} {{.GoVersion}}{{end}}", ".")) {
		path, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		switch {
		case !ok || v == "":
		case path == "github.com/onceflow/onceflow":
			own = v
		case newest == "" || version.Compare("go"+v, "go"+newest) > 0:
			newest, by = v, path
		}
	}
	if own == "" || newest == "" {
		t.Fatalf("go list -deps gave no go directive for onceflow (%q) or its dependencies (%q)", own, newest)
	}
	if version.Compare("go"+own, "go"+newest) != 0 {
		t.Errorf("the root go.mod says go %s; the newest its library user's dependencies ask for is %s (%s): make it that", own, newest, by)
	}
	t.Logf("go %s, asked for by %s", own, by)
}
