package repocheck

import (
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/app"
)

// TestConfigMapsMirrorEnvFiles: each deploy/<transport>.env has a
// ConfigMap deploy/k8s/configmap-<transport>.yaml with the same keys and
// values, and back; each is a configuration the service accepts, and none
// opens the API to anonymous callers (ALLOW_ANONYMOUS is for development:
// compose sets it beside them).
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
		if !maps.Equal(cm.Data, want) {
			t.Errorf("configmap-%s.yaml data %v\ndiffers from deploy/%s.env %v", transport, cm.Data, transport, want)
		}
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
		if _, err := app.LoadConfig(environ); err != nil {
			t.Errorf("configmap-%s.yaml: %v", transport, err)
		}
	}
}
