package repocheck

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/app"
	"github.com/onceflow/onceflow/transport"
)

// TestDeploySettingsDeclared: every variable that deploy/*.env (or one
// of its comments, as NAME=value), the k8s ConfigMaps and Deployment, and
// the environment of the compose services that run the service set is a
// setting of app.Config, with a value the setting takes on its own; and each
// compose service's environment, its env file with what its environment
// block adds, is a configuration the service accepts.
func TestDeploySettingsDeclared(t *testing.T) {
	sources := map[string]map[string]string{}
	envFiles, _ := filepath.Glob(filepath.Join(root, "deploy", "*.env"))
	for _, f := range envFiles {
		sources[f] = readEnvFile(t, f)
		sources[f+" (comments)"] = commentedSettings(t, f)
	}
	configMaps, _ := filepath.Glob(filepath.Join(root, "deploy", "k8s", "configmap-*.yaml"))
	for _, f := range configMaps {
		var cm struct{ Data map[string]string }
		rel, _ := filepath.Rel(root, f)
		readYAML(t, rel, &cm)
		sources[f] = cm.Data
	}
	var deployment struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Name string
						Env  []struct{ Name, Value string }
					}
				}
			}
		}
	}
	readYAML(t, "deploy/k8s/deployment.yaml", &deployment)
	for _, c := range deployment.Spec.Template.Spec.Containers {
		vars := map[string]string{}
		for _, e := range c.Env {
			vars[e.Name] = e.Value
		}
		sources["deploy/k8s/deployment.yaml container "+c.Name] = vars
	}
	var compose composeServices
	readYAML(t, "docker-compose.yml", &compose)
	composed := 0
	for _, name := range slices.Sorted(maps.Keys(compose.Services)) {
		svc := compose.Services[name]
		if !runsTheService(svc.EnvFile) {
			continue // a backend, not the service
		}
		composed++
		src := "docker-compose.yml service " + name
		environ := svc.settings(t)
		vars := map[string]string{}
		for k, v := range svc.Environment {
			vars[k] = interpolate(v)
		}
		sources[src] = vars
		var list []string
		for k, v := range environ {
			list = append(list, k+"="+v)
		}
		if !deployedBrokerBuiltIn(t, src, environ["TRANSPORT"]) {
			continue
		}
		if _, err := app.LoadConfig(list); err != nil {
			t.Errorf("%s: %v", src, err)
		}
	}
	if len(envFiles) == 0 || len(configMaps) == 0 || composed == 0 {
		t.Fatalf("%d env files, %d ConfigMaps, %d compose services of the service: want some of each", len(envFiles), len(configMaps), composed)
	}
	for _, src := range slices.Sorted(maps.Keys(sources)) {
		vars := sources[src]
		if !deployedBrokerBuiltIn(t, src, vars["TRANSPORT"]) {
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(vars)) {
			if err := app.CheckSetting(k, vars[k]); err != nil {
				t.Errorf("%s: %v", src, err)
			}
		}
	}
}

// commentedSettings are the NAME=value the # comments of an env file
// mention.
func commentedSettings(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for line := range strings.Lines(string(b)) {
		if comment, ok := strings.CutPrefix(strings.TrimSpace(line), "#"); ok {
			for _, m := range mentionedSetting.FindAllStringSubmatch(comment, -1) {
				vars[m[1]] = m[2]
			}
		}
	}
	return vars
}

var mentionedSetting = regexp.MustCompile(`\b([A-Z][A-Z0-9_]*[A-Z0-9])=([^\s.,;)]*(?:[.,][^\s.,;)]+)*)`)

// interpolate resolves compose's ${VAR}, ${VAR:-default} and ${VAR-default}
// as an environment that sets none of them would.
func interpolate(v string) string {
	return composeVar.ReplaceAllString(v, "$1")
}

var composeVar = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*(?::?-([^}]*))?\}`)

// deployedBrokerBuiltIn reports whether the deployment file src, which sets
// TRANSPORT=kind, names a broker this build has (transport.Kinds). One it
// does not have was removed from transport/ by a fork
// (docs/brokers.md, Removing a broker): its deployment files are left
// over, unused, and not checked against a service that cannot run them;
// the test says so.
func deployedBrokerBuiltIn(t *testing.T, src, kind string) bool {
	t.Helper()
	if kind == "" || slices.Contains(transport.Kinds, kind) {
		return true
	}
	t.Logf("%s: TRANSPORT=%s, a broker this build does not have: not checked (delete the file with the broker)", src, kind)
	return false
}
