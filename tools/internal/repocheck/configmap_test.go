package repocheck

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/app"
	"github.com/onceflow/onceflow/internal/testenv/k8s"
)

// TestConfigMapsMirrorEnvFiles: each deploy/<transport>.env has a
// ConfigMap deploy/k8s/configmap-<transport>.yaml with the same keys and
// values, and back, but for credentials: a value that holds a password (a
// URL's user:password@) or a setting that is a secret (a password,
// secret, token or key: [secretName]) is never in a ConfigMap, which anyone who may read
// the namespace's configuration reads, but in the Secret the Deployment
// reads after it. With those, each is a configuration the service accepts,
// and none opens the API to anonymous callers (ALLOW_ANONYMOUS is for
// development: compose sets it beside them).
func TestConfigMapsMirrorEnvFiles(t *testing.T) {
	t.Parallel()
	envs, err := filepath.Glob(filepath.Join(root, "deploy", "*.env"))
	if err != nil {
		t.Fatal(err)
	}
	manifests, err := filepath.Glob(filepath.Join(root, "deploy", "k8s", "configmap-*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(envs) == 0 || len(envs) != len(manifests) {
		t.Fatalf("%d env files, %d ConfigMaps: want one ConfigMap per env file", len(envs), len(manifests))
	}
	df := readDockerfile(t)
	binary := filepath.Base(df.Entrypoint[0])
	for _, path := range envs {
		transport := strings.TrimSuffix(filepath.Base(path), ".env")
		want := readEnvFile(t, path)
		if !deployedBrokerBuiltIn(t, path, want["TRANSPORT"]) {
			continue
		}
		var cm k8s.ConfigMap
		readYAML(t, filepath.Join("deploy", "k8s", "configmap-"+transport+".yaml"), &cm)
		if cm.Kind != "ConfigMap" || cm.Metadata.Name != binary+"-"+transport {
			t.Errorf("configmap-%s.yaml: %s %q, want ConfigMap %q", transport, cm.Kind, cm.Metadata.Name, binary+"-"+transport)
		}
		secrets := compareMirror(t, "deploy/k8s/configmap-"+transport+".yaml", cm.Data, "deploy/"+transport+".env", want)
		if _, ok := want["ALLOW_ANONYMOUS"]; ok {
			t.Errorf("deploy/%s.env sets ALLOW_ANONYMOUS: the env files and ConfigMaps are for production, which requires API_KEYS", transport)
		}
		if want["TRANSPORT"] != transport {
			t.Errorf("deploy/%s.env: TRANSPORT=%s", transport, want["TRANSPORT"])
		}
		var environ []string
		for k, v := range cm.Data {
			environ = append(environ, k+"="+v)
		}
		for k, v := range secrets {
			environ = append(environ, k+"="+v)
		}
		if _, err := app.LoadConfig(environ); err != nil {
			t.Errorf("configmap-%s.yaml: %v", transport, err)
		}
	}
}

// compareMirror requires the data of the ConfigMap in file cmFile to be
// the settings of the env file envFile, but for those that hold a
// password (a URL's user:password@) or are secrets ([secretName]), which
// it must leave to a Secret. It deletes those from env and returns them.
func compareMirror(t *testing.T, cmFile string, data map[string]string, envFile string, env map[string]string) (secrets map[string]string) {
	t.Helper()
	secrets = map[string]string{}
	for k, v := range env {
		if holdsPassword(v) || secretName.MatchString(k) {
			secrets[k] = v
			delete(env, k)
		}
	}
	for k := range secrets {
		if _, ok := data[k]; ok {
			t.Errorf("%s: %s holds a password: leave it to the Secret", cmFile, k)
		}
	}
	if !maps.Equal(data, env) {
		t.Errorf("%s data %v\ndiffers from %s %v", cmFile, data, envFile, env)
	}
	return secrets
}

// TestDomainConfigMapMirrorsComposeOverlay: the domain's settings in
// Kubernetes, its ConfigMap ([domainConfigMap]), have the same keys and
// values as the domain's compose overlay ([composeOverlay]) sets for the
// service, in each compose service that runs it, but for credentials;
// each is a variable the binary's packages read. A domain without an
// overlay, or whose overlay sets nothing for the service, ships an empty
// ConfigMap.
func TestDomainConfigMapMirrorsComposeOverlay(t *testing.T) {
	t.Parallel()
	name := domainConfigMap(filepath.Base(readDockerfile(t).Entrypoint[0]))
	var (
		cm   k8s.ConfigMap
		file string
	)
	for _, m := range k8s.Read(t, root, domainManifestDirs(t)...) {
		if m.Kind == "ConfigMap" && m.Name == name {
			m.Decode(t, &cm)
			file = m.File
		}
	}
	if file == "" {
		t.Fatalf("no manifest of %v defines ConfigMap %q, the domain's settings", domainManifestDirs(t), name)
	}

	var base, overlay composeServices
	readYAML(t, "docker-compose.yml", &base)
	if files := composeFiles(t); len(files) > 1 {
		readYAML(t, files[1], &overlay)
	}
	reads := envReads(t, binaryDirs(t))
	runs := 0
	for _, svc := range slices.Sorted(maps.Keys(base.Services)) {
		if !runsTheService(base.Services[svc].EnvFile) {
			continue
		}
		runs++
		// As Compose merges them: the overlay's env files after the base
		// file's, its environment entries over both, by key.
		set := overlay.Services[svc].settings(t)
		for k := range set {
			if !reads[k] {
				t.Errorf("%s sets %s for %s, which the binary's packages do not read", composeOverlay, k, svc)
			}
		}
		compareMirror(t, file, cm.Data, composeOverlay+" service "+svc, set)
	}
	if runs == 0 {
		t.Fatal("docker-compose.yml has no service that runs the service (env_file deploy/<transport>.env)")
	}
}

// composeServices is the part of a compose file these checks read.
type composeServices struct {
	Services map[string]composeService `yaml:"services"`
}

// composeService is one service of a compose file.
type composeService struct {
	EnvFile     []string          `yaml:"env_file"`
	Environment map[string]string `yaml:"environment"`
}

// settings are the variables s sets: those of its env files (relative to
// the root, the compose project's directory), then its environment
// entries, interpolated as an environment that sets none would.
func (s composeService) settings(t *testing.T) map[string]string {
	t.Helper()
	vars := map[string]string{}
	for _, f := range s.EnvFile {
		maps.Copy(vars, readEnvFile(t, filepath.Join(root, f)))
	}
	for k, v := range s.Environment {
		vars[k] = interpolate(v)
	}
	return vars
}

// runsTheService reports whether a compose service whose env files are
// envFile runs the service: its first is a deploy/<transport>.env.
func runsTheService(envFile []string) bool {
	return len(envFile) > 0 && strings.HasPrefix(envFile[0], "deploy/")
}
