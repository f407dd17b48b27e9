package repocheck

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// readFile returns the file at path, relative to the repository's root.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readYAML decodes the YAML file at path (relative to the repository's
// root) into v and returns the file's text.
func readYAML(t *testing.T, path string, v any) string {
	t.Helper()
	s := readFile(t, path)
	if err := yaml.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return s
}

// readEnvFile reads a deploy/*.env file: KEY=VALUE lines, # comments.
func readEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vars := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: %q is not KEY=VALUE", path, line)
		}
		vars[k] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return vars
}

// dockerfile is what the manifests must agree with in the Dockerfile's
// final stage.
type dockerfile struct {
	User       string   // USER, e.g. nonroot:nonroot
	Expose     string   // EXPOSE, e.g. 8080
	Entrypoint []string // ENTRYPOINT, exec form
	Cmd        []string // CMD, exec form
}

func readDockerfile(t *testing.T) dockerfile {
	t.Helper()
	var d dockerfile
	for line := range strings.Lines(readFile(t, "Dockerfile")) {
		instr, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch instr {
		case "USER":
			d.User = arg
		case "EXPOSE":
			d.Expose = arg
		case "ENTRYPOINT", "CMD":
			var v []string
			if err := json.Unmarshal([]byte(arg), &v); err != nil {
				t.Fatalf("Dockerfile %s %s: want the exec form: %v", instr, arg, err)
			}
			if instr == "CMD" {
				d.Cmd = v
			} else {
				d.Entrypoint = v
			}
		}
	}
	return d
}
