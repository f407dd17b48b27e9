// Command rename turns this repository into a service of its own, in place:
//
//	cd tools && go run ./cmd/rename -dir .. -module github.com/acme/orders -name orders
//
// (`make rename MODULE=github.com/acme/orders NAME=orders`). It rewrites the
// module path, the binary's directory under cmd/, the metric prefix, the
// service name default, the compose and Kubernetes names, the Dockerfile
// and the docs; see package internal/rename for the rules.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/onceflow/onceflow/tools/internal/rename"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "rename:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rename", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var opts rename.Options
	fs.StringVar(&opts.Module, "module", "", "new module path, e.g. github.com/acme/orders")
	fs.StringVar(&opts.Name, "name", "", "new service name, e.g. orders")
	dir := fs.String("dir", ".", "root of the module to rename")
	if err := fs.Parse(args); err != nil {
		return err
	}
	changed, err := rename.Tree(*dir, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "renamed %s to %s (%s): %d files changed or moved\n",
		rename.FromName, opts.Name, opts.Module, len(changed))
	return nil
}
