package repocheck

import (
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

type workflow struct {
	On   map[string]any `yaml:"on"`
	Jobs map[string]struct {
		Container string `yaml:"container"`
		Services  map[string]struct {
			Image string `yaml:"image"`
		} `yaml:"services"`
		Env   map[string]string `yaml:"env"`
		Steps []struct {
			Uses string `yaml:"uses"`
			Run  string `yaml:"run"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// TestWorkflow checks .github/workflows/ci.yml: it runs on pushes and pull
// requests; its jobs end in make targets that exist; the test job runs
// make test, also on a renamed tree, with REQUIRE_SERVICES=1 and every
// service variable internal/testenv and its brokerenv read pointing at
// its service containers, which use docker-compose.yml's images;
// govulncheck runs there.
func TestWorkflow(t *testing.T) {
	t.Parallel()
	var wf workflow
	src := readYAML(t, ".github/workflows/ci.yml", &wf)
	_, push := wf.On["push"]
	_, pr := wf.On["pull_request"]
	if !push || !pr {
		t.Errorf("on: %v, want push and pull_request", wf.On)
	}
	targets := makeTargets(t)
	ran := map[string]bool{}
	makeRun := regexp.MustCompile(`\bmake ([a-z0-9-]+)`)
	for name, job := range wf.Jobs {
		if len(job.Steps) == 0 {
			t.Errorf("job %s has no steps", name)
			continue
		}
		last := strings.TrimSpace(job.Steps[len(job.Steps)-1].Run)
		target, ok := strings.CutPrefix(last, "make ")
		if !ok || !targets[target] {
			t.Errorf("job %s ends with %q, want a make target of the Makefile", name, last)
		}
		ran[target] = true
		for _, s := range job.Steps {
			for _, m := range makeRun.FindAllStringSubmatch(s.Run, -1) {
				if !targets[m[1]] {
					t.Errorf("job %s runs make %s, which the Makefile does not have", name, m[1])
				}
			}
		}
	}
	for _, want := range []string{"test", "vulncheck"} {
		if !ran[want] {
			t.Errorf("no job ends with make %s", want)
		}
	}

	job, ok := wf.Jobs["test"]
	if !ok {
		t.Fatal("no job test")
	}
	if !strings.Contains(src, "make rename MODULE=") {
		t.Error("the test job does not run make rename on a copy")
	}
	if job.Env["REQUIRE_SERVICES"] != "1" {
		t.Errorf("REQUIRE_SERVICES=%q, want 1", job.Env["REQUIRE_SERVICES"])
	}
	compose := readFile(t, "docker-compose.yml")
	for _, svc := range []string{"postgres", "redis", "rabbitmq"} {
		img := job.Services[svc].Image
		if img == "" || !strings.Contains(compose, "image: "+img+"\n") {
			t.Errorf("service container %s: image %q, want docker-compose.yml's", svc, img)
		}
	}
	for _, v := range serviceVariables(t) {
		val, ok := job.Env[v]
		if !ok {
			t.Errorf("the test job does not set %s, which internal/testenv or brokerenv reads", v)
			continue
		}
		host := val
		if u, err := url.Parse(val); err == nil && u.Host != "" {
			host = u.Host
		}
		host, _, _ = strings.Cut(host, ":")
		if _, isService := job.Services[host]; !isService && host != "127.0.0.1" {
			t.Errorf("%s=%s names host %q: neither a service container nor the job's own loopback", v, val, host)
		}
	}
}

// serviceVariables lists the TEST_* variables internal/testenv and its
// brokerenv read, but those for which the tests start a service of their
// own when unset.
func serviceVariables(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, dir := range []string{"testenv", filepath.Join("testenv", "brokerenv")} {
		matched, err := filepath.Glob(filepath.Join(root, "internal", dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, matched...)
	}
	ownWhenUnset := []string{"TEST_KAFKA_BROKERS", "TEST_REDIS_CLUSTER_ADDRS"}
	quoted := regexp.MustCompile(`"(TEST_[A-Z_]+)"`)
	var vars []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range quoted.FindAllStringSubmatch(string(b), -1) {
			if !slices.Contains(ownWhenUnset, v[1]) && !slices.Contains(vars, v[1]) {
				vars = append(vars, v[1])
			}
		}
	}
	if len(vars) == 0 {
		t.Fatal("found no TEST_ variables in internal/testenv and brokerenv")
	}
	return vars
}

// makeTargets lists the Makefile's targets.
func makeTargets(t *testing.T) map[string]bool {
	t.Helper()
	targets := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-z0-9-]+):`).FindAllStringSubmatch(makefiles(t), -1) {
		targets[m[1]] = true
	}
	return targets
}

// makeInclude is the Makefile's include of the domain's own make files.
var makeInclude = regexp.MustCompile(`(?m)^-include \$\(wildcard ([^)]+)\)$`)

// makefiles is the text of the Makefile and of the files it includes (the
// domain's handlers/*.mk), one after the other.
func makefiles(t *testing.T) string {
	t.Helper()
	text := readFile(t, "Makefile")
	all := text
	for _, m := range makeInclude.FindAllStringSubmatch(text, -1) {
		files, err := filepath.Glob(filepath.Join(root, m[1]))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			all += "\n" + readFile(t, mustRel(t, f))
		}
	}
	return all
}
