//go:build examplecheck

package repocheck

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// shortSuites are the packages of tools/ whose tests are the short
// variants of the long suites: the fault suite (make chaos) and the bench
// (make bench). A fork keeps both: they run on the template's own domain.
var shortSuites = []string{"./internal/chaos/", "./cmd/bench/"}

// TestFork does to a copy of the repository what docs/forking.md tells a
// fork to do, then checks the copy as CI checks the tree. It runs the
// commands of the page's fork-steps block as written (make rename, then
// deleting the example: handlers/), puts the shop domain of testdata/shop
// where the example was, and changes the one line that picks the domain.
// Then, in the root module and in tools/: go build, go vet with every
// build tag the tree uses, and the unit tests (go test -short); make lint;
// the docs check; the shop's end-to-end test (in-process transport and
// Redis Streams); and the short variants of the fault suite and the bench.
// It compiles both modules anew, so it runs with make example-check (and
// in CI), not in make test.
func TestFork(t *testing.T) {
	dir := copyTracked(t)
	for _, step := range forkSteps(t) {
		shell(t, dir, step)
	}
	if _, err := os.Stat(filepath.Join(dir, "handlers")); !os.IsNotExist(err) {
		t.Fatalf("docs/forking.md's steps leave handlers/ in place (%v): the example is not one directory", err)
	}
	shop := filepath.Join(dir, "tools", "internal", "repocheck", "testdata", "shop")
	if err := os.CopyFS(filepath.Join(dir, "handlers", "shop"), os.DirFS(shop)); err != nil {
		t.Fatal(err)
	}
	wiring, err := filepath.Glob(filepath.Join(dir, "cmd", "*", "domain.go"))
	if err != nil || len(wiring) != 1 {
		t.Fatalf("the renamed copy's cmd/*/domain.go: %q, %v; want one", wiring, err)
	}
	pickDomain(t, wiring[0])

	tags := buildTags(t, dir)
	for _, module := range []string{".", "tools"} {
		gocmd(t, dir, module, "build", "./...")
		gocmd(t, dir, module, "vet", "-tags", strings.Join(tags, ","), "./...")
		gocmd(t, dir, module, "test", "-short", "-count=1", "./...")
	}
	shell(t, dir, "make lint")
	gocmd(t, dir, "tools", "test", "-count=1", "-run", "^TestDocs", "./internal/repocheck/")
	gocmd(t, dir, ".", "test", "-count=1", "./handlers/...")
	gocmd(t, dir, "tools", append([]string{"test", "-count=1", "-timeout", "15m"}, shortSuites...)...)
}

// forkStepsBlock is the block of docs/forking.md that a fork runs.
var forkStepsBlock = regexp.MustCompile("(?s)<!-- fork-steps -->\\s*```sh\\n(.*?)```\\s*<!-- /fork-steps -->")

// forkSteps returns the command lines of docs/forking.md's fork-steps
// block, comments dropped.
func forkSteps(t *testing.T) []string {
	t.Helper()
	m := forkStepsBlock.FindStringSubmatch(readFile(t, "docs/forking.md"))
	if m == nil {
		t.Fatal("docs/forking.md has no <!-- fork-steps --> block of sh commands")
	}
	var steps []string
	for _, line := range strings.Split(m[1], "\n") {
		line, _, _ = strings.Cut(line, "#")
		if line = strings.TrimSpace(line); line != "" {
			steps = append(steps, line)
		}
	}
	if len(steps) == 0 {
		t.Fatal("docs/forking.md's fork-steps block has no command")
	}
	return steps
}

// The renamed tree's domain.go: the import of the domain's package below
// handlers/, and the line that returns its Domain.
var (
	domainImport = regexp.MustCompile(`(/handlers)(/[A-Za-z0-9_/]+)?"`)
	domainLine   = regexp.MustCompile(`return [A-Za-z0-9_]+\.Domain\(\)`)
)

// pickDomain changes the one line of the renamed tree's domain.go (and
// the import it names) from the domain it picks, below handlers/, to the
// shop.
func pickDomain(t *testing.T, wiring string) {
	t.Helper()
	b, err := os.ReadFile(wiring)
	if err != nil {
		t.Fatal(err)
	}
	if !domainImport.Match(b) || !domainLine.Match(b) {
		t.Fatalf("%s does not import a domain below handlers/ and return its Domain() as this test expects:\n%s", wiring, b)
	}
	changed := domainLine.ReplaceAllString(domainImport.ReplaceAllString(string(b), `${1}/shop"`), "return shop.Domain()")
	if err := os.WriteFile(wiring, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
}

// buildConstraint is a //go:build line.
var buildConstraint = regexp.MustCompile(`(?m)^//go:build (.+)$`)

// buildTags lists the build tags the Go files under dir name in their
// constraints, but the operating systems, architectures and race: with
// all of them set, go vet reaches every file a tag keeps from the default
// build.
func buildTags(t *testing.T, dir string) []string {
	t.Helper()
	var tags []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range buildConstraint.FindAllStringSubmatch(string(b), -1) {
			for _, word := range regexp.MustCompile(`[A-Za-z0-9_]+`).FindAllString(m[1], -1) {
				if !slices.Contains([]string{"linux", "darwin", "windows", "race", "ignore"}, word) && !slices.Contains(tags, word) {
					tags = append(tags, word)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(tags)
	return tags
}

// gocmd runs the go command in module, a directory of the copy dir, and
// fails the test if it fails.
func gocmd(t *testing.T, dir, module string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	run(t, cmd, filepath.Join(dir, module), "go "+strings.Join(args, " ")+" in "+module)
}

// shell runs line with sh in dir and fails the test if it fails.
func shell(t *testing.T, dir, line string) {
	t.Helper()
	run(t, exec.Command("sh", "-c", line), dir, line)
}

func run(t *testing.T, cmd *exec.Cmd, dir, what string) {
	t.Helper()
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	t.Logf("%s", what)
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v", what, err)
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

// droppedBroker is the broker TestBrokerRemoved takes out.
const droppedBroker = "nats"

// TestBrokerRemoved removes one broker from a copy of the repository as
// docs/brokers.md says a fork that does not use it may: its folder under
// transport/ and its one entry in the package that picks a broker by
// TRANSPORT (every clause or table entry of transport/'s own files that
// names the broker's package, and the import), then regenerates the
// configuration page, which lists the brokers built in. Then both modules
// must build and vet, their unit tests pass, and the tests of the picker,
// of the brokers that remain and of the service pass against the real
// services.
func TestBrokerRemoved(t *testing.T) {
	dir := copyTracked(t)
	dropBroker(t, dir, droppedBroker)
	// The configuration page lists the brokers the build has: it is
	// generated, so removing one regenerates it.
	gocmd(t, dir, ".", "generate", "./app")
	for _, module := range []string{".", "tools"} {
		gocmd(t, dir, module, "build", "./...")
		gocmd(t, dir, module, "vet", "./...")
		gocmd(t, dir, module, "test", "-short", "-count=1", "./...")
	}
	gocmd(t, dir, ".", "test", "-count=1", "./transport/...", "./app/...")
}
