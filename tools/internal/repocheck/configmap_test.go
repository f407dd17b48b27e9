package repocheck

import (
	"maps"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/app"
)

// TestConfigMapsMirrorEnvFiles: each deploy/<transport>.env has a
// ConfigMap deploy/k8s/configmap-<transport>.yaml with the same keys and
// values, and back, but for credentials: a value that holds a password (a
// URL's user:password@) is never in a ConfigMap, which anyone who may read
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
		var cm configMap
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
// password (a URL's user:password@), which it must leave to a Secret. It
// deletes those from env and returns them.
func compareMirror(t *testing.T, cmFile string, data map[string]string, envFile string, env map[string]string) (secrets map[string]string) {
	t.Helper()
	secrets = map[string]string{}
	for k, v := range env {
		if u, err := url.Parse(v); err == nil && u.User != nil {
			if _, ok := u.User.Password(); ok {
				secrets[k] = v
				delete(env, k)
			}
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
