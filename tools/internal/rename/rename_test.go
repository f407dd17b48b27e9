package rename_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/tools/internal/rename"
)

// fixture is a small module named as this repository is, with each form of
// the name the rename must reach.
var fixture = map[string]string{
	"go.mod": "module github.com/onceflow/onceflow\n\ngo 1.26.0\n",
	// A nested module that requires the root through a replace, as tools/
	// does.
	"tools/go.mod": "module github.com/onceflow/onceflow/tools\n\ngo 1.26.0\n\n" +
		"require github.com/onceflow/onceflow v0.0.0-00010101000000-000000000000\n\n" +
		"replace github.com/onceflow/onceflow => ../\n",
	"cmd/onceflow/main.go": `// Command onceflow runs the service.
package main

import (
	"fmt"

	"github.com/onceflow/onceflow/app"
	"github.com/zeta/lib"
)

func main() { fmt.Println(app.Name, lib.X, "ONCEFLOW_MODE", "Onceflow") }
`,
	"app/metrics.go": "package app\n\nconst Name = \"onceflow_receiver_outcomes_total\"\n",
	"Dockerfile":     "RUN go build -o /out/onceflow ./cmd/onceflow\nENTRYPOINT [\"/onceflow\"]\n",
	"README.md":      "# onceflow\n\n`curl localhost:8080/metrics | grep onceflow_store`\n",
	"bin/onceflow":   "build output, left alone",
	"testdata/blob":  "onceflow\x00binary",
}

func writeFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range fixture {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestTreeRewritesEveryForm(t *testing.T) {
	t.Parallel()
	dir := writeFixture(t)
	changed, err := rename.Tree(dir, rename.Options{Module: "example.com/shop/billing", Name: "billing"})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(changed)
	want := []string{"Dockerfile", "README.md", "app/metrics.go", "cmd/billing", "cmd/onceflow/main.go", "go.mod", "tools/go.mod"}
	if !slices.Equal(changed, want) {
		t.Errorf("changed = %q, want %q", changed, want)
	}
	if got := read(t, dir, "go.mod"); !strings.HasPrefix(got, "module example.com/shop/billing\n") {
		t.Errorf("go.mod = %q", got)
	}
	// The new path sorts after github.com/zeta: gofmt moves the import.
	wantMain := `// Command billing runs the service.
package main

import (
	"fmt"

	"example.com/shop/billing/app"
	"github.com/zeta/lib"
)

func main() { fmt.Println(app.Name, lib.X, "BILLING_MODE", "Billing") }
`
	if got := read(t, dir, "cmd/billing/main.go"); got != wantMain {
		t.Errorf("cmd/billing/main.go =\n%s\nwant\n%s", got, wantMain)
	}
	if _, err := os.Stat(filepath.Join(dir, "cmd/onceflow")); !os.IsNotExist(err) {
		t.Errorf("cmd/onceflow still there: %v", err)
	}
	for name, want := range map[string]string{
		"app/metrics.go": "package app\n\nconst Name = \"billing_receiver_outcomes_total\"\n",
		"Dockerfile":     "RUN go build -o /out/billing ./cmd/billing\nENTRYPOINT [\"/billing\"]\n",
		"README.md":      "# billing\n\n`curl localhost:8080/metrics | grep billing_store`\n",
		"bin/onceflow":   fixture["bin/onceflow"],
		"testdata/blob":  fixture["testdata/blob"],
		"tools/go.mod": "module example.com/shop/billing/tools\n\ngo 1.26.0\n\n" +
			"require example.com/shop/billing v0.0.0-00010101000000-000000000000\n\n" +
			"replace example.com/shop/billing => ../\n",
	} {
		if got := read(t, dir, name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	left, err := rename.Leftovers(dir, rename.FromName)
	if err != nil || len(left) != 0 {
		t.Errorf("Leftovers = %q, %v; want none", left, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "NOTES"), []byte("Forked from "+strings.ToUpper(rename.FromName)), 0o644); err != nil {
		t.Fatal(err)
	}
	if left, _ := rename.Leftovers(dir, rename.FromName); !slices.Equal(left, []string{"NOTES"}) {
		t.Errorf("Leftovers = %q, want NOTES (any case)", left)
	}
}

// TestTreeTwice: a renamed tree renames again, as its FromName is rewritten
// with it.
func TestTreeTwice(t *testing.T) {
	t.Parallel()
	dir := writeFixture(t)
	opts := rename.Options{Module: "github.com/acme/orders", Name: "orders"}
	if _, err := rename.Tree(dir, opts); err != nil {
		t.Fatal(err)
	}
	again, err := rename.Tree(dir, opts)
	if err != nil || len(again) != 0 {
		t.Errorf("second rename changed %q, %v; want nothing", again, err)
	}
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		opts rename.Options
		want string // "" for valid
	}{
		{rename.Options{Module: "github.com/acme/orders", Name: "orders"}, ""},
		{rename.Options{Module: "example.com/x", Name: "a1b2"}, ""},
		{rename.Options{Module: "github.com/acme/orders", Name: "order-service"}, `NAME "order-service"`},
		{rename.Options{Module: "github.com/acme/orders", Name: "order_service"}, `NAME "order_service"`},
		{rename.Options{Module: "", Name: "orders"}, `MODULE ""`},
		{rename.Options{Module: "github.com/acme/my orders", Name: "orders"}, `MODULE "github.com/acme/my orders"`},
		{rename.Options{Module: "github.com/acme/orders", Name: "Orders"}, `NAME "Orders": want`},
		{rename.Options{Module: "github.com/acme/orders", Name: "1orders"}, `NAME "1orders"`},
		{rename.Options{Module: "github.com/acme/orders", Name: ""}, `NAME ""`},
	} {
		err := tc.opts.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v.Validate() = %v, want %q", tc.opts, err, tc.want)
		}
	}
}

func TestTreeRefusesInvalidOptions(t *testing.T) {
	t.Parallel()
	dir := writeFixture(t)
	if _, err := rename.Tree(dir, rename.Options{Module: "github.com/acme/orders", Name: "Bad Name"}); err == nil {
		t.Fatal("Tree accepted NAME \"Bad Name\"")
	}
	if got := read(t, dir, "go.mod"); got != fixture["go.mod"] {
		t.Errorf("go.mod changed to %q", got)
	}
}
