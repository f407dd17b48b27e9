// Command imagesize measures the service's container image without Docker:
// it builds the binary as the Dockerfile's build stage does (its `go build`
// line, run as written but for the output path) and adds the size of the
// final stage's base image, estimated from the installed size of the Debian
// packages that image is made of (apt-cache). It prints one line and, with
// -readme, writes it into that file between its image-size markers:
//
//	cd tools && go run ./cmd/imagesize -dockerfile ../Dockerfile -readme ../docs/deploying.md   (make image-size)
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// basePackages are the Debian packages of gcr.io/distroless/static-debian12,
// the Dockerfile's base: its files are theirs, plus /etc/passwd and /tmp.
var basePackages = []string{"base-files", "netbase", "tzdata", "ca-certificates"}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "imagesize:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("imagesize", flag.ContinueOnError)
	dockerfile := fs.String("dockerfile", "Dockerfile", "the Dockerfile to measure")
	readme := fs.String("readme", "", "a file whose image-size markers get the line")
	if err := fs.Parse(args); err != nil {
		return err
	}
	b, err := os.ReadFile(*dockerfile)
	if err != nil {
		return err
	}
	build, base, err := parseDockerfile(string(b))
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "imagesize-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "binary")
	cmd := exec.Command("sh", "-c", withOutput(build, out))
	cmd.Dir = filepath.Dir(*dockerfile)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", build, err)
	}
	info, err := os.Stat(out)
	if err != nil {
		return err
	}
	baseSize, err := installedSize(basePackages)
	if err != nil {
		return err
	}
	line := fmt.Sprintf("about %s: the binary %s (as the Dockerfile builds it) and %s, about %s (the installed size of its Debian packages %s)",
		mib(info.Size()+baseSize), mib(info.Size()), base, mib(baseSize), strings.Join(basePackages, ", "))
	fmt.Fprintln(stdout, line)
	if *readme == "" {
		return nil
	}
	doc, err := os.ReadFile(*readme)
	if err != nil {
		return err
	}
	updated, err := replaceMarked(string(doc), line)
	if err != nil {
		return fmt.Errorf("%s: %w", *readme, err)
	}
	return os.WriteFile(*readme, []byte(updated), 0o644)
}

// parseDockerfile returns the RUN command that runs go build and the final
// stage's base image, named by its tag without the digest it is pinned to.
func parseDockerfile(s string) (build, base string, err error) {
	for line := range strings.Lines(s) {
		instr, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch {
		case instr == "RUN" && strings.Contains(arg, "go build"):
			build = arg
		case instr == "FROM":
			base, _, _ = strings.Cut(arg, " ")
			base, _, _ = strings.Cut(base, "@")
		}
	}
	if build == "" || base == "" || !outputFlag.MatchString(build) {
		return "", "", errors.New("want a RUN line with go build -o <path> and a FROM")
	}
	return build, base, nil
}

var outputFlag = regexp.MustCompile(`-o\s+\S+`)

// withOutput is build writing its binary to out instead.
func withOutput(build, out string) string {
	return outputFlag.ReplaceAllLiteralString(build, "-o "+out)
}

// installedSize sums the Installed-Size (KiB) apt-cache reports for pkgs.
func installedSize(pkgs []string) (int64, error) {
	out, err := exec.Command("apt-cache", append([]string{"show", "--no-all-versions"}, pkgs...)...).Output()
	if err != nil {
		return 0, fmt.Errorf("apt-cache show %s: %w", strings.Join(pkgs, " "), err)
	}
	var kib int64
	n := 0
	for _, m := range regexp.MustCompile(`(?m)^Installed-Size: (\d+)$`).FindAllStringSubmatch(string(out), -1) {
		v, _ := strconv.ParseInt(m[1], 10, 64)
		kib += v
		n++
	}
	if n != len(pkgs) {
		return 0, fmt.Errorf("apt-cache reported %d sizes for %d packages", n, len(pkgs))
	}
	return kib * 1024, nil
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

const (
	startMarker = "<!-- image-size -->"
	endMarker   = "<!-- /image-size -->"
)

// replaceMarked puts line between doc's markers.
func replaceMarked(doc, line string) (string, error) {
	before, rest, ok := strings.Cut(doc, startMarker)
	_, after, ok2 := strings.Cut(rest, endMarker)
	if !ok || !ok2 {
		return "", fmt.Errorf("no %s ... %s", startMarker, endMarker)
	}
	return before + startMarker + line + endMarker + after, nil
}
