package repocheck

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/app"
	"github.com/onceflow/onceflow/handlers/payments"
	"github.com/onceflow/onceflow/internal/testenv"
)

// The parts of the manifests the checks read.
type (
	metadata struct {
		Name        string            `yaml:"name"`
		Labels      map[string]string `yaml:"labels"`
		Annotations map[string]string `yaml:"annotations"`
	}
	probe struct {
		HTTPGet struct {
			Path string `yaml:"path"`
			Port string `yaml:"port"`
		} `yaml:"httpGet"`
	}
	container struct {
		Name    string   `yaml:"name"`
		Image   string   `yaml:"image"`
		Command []string `yaml:"command"`
		Args    []string `yaml:"args"`
		Ports   []struct {
			Name          string `yaml:"name"`
			ContainerPort int    `yaml:"containerPort"`
		} `yaml:"ports"`
		Env []struct {
			Name      string `yaml:"name"`
			Value     string `yaml:"value"`
			ValueFrom *struct {
				SecretKeyRef *struct {
					Name     string `yaml:"name"`
					Key      string `yaml:"key"`
					Optional bool   `yaml:"optional"`
				} `yaml:"secretKeyRef"`
			} `yaml:"valueFrom"`
		} `yaml:"env"`
		EnvFrom []struct {
			ConfigMapRef *struct{ Name string } `yaml:"configMapRef"`
		} `yaml:"envFrom"`
		ReadinessProbe probe `yaml:"readinessProbe"`
		LivenessProbe  probe `yaml:"livenessProbe"`
		Resources      struct {
			Requests map[string]string `yaml:"requests"`
		} `yaml:"resources"`
		SecurityContext struct {
			AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
			ReadOnlyRootFilesystem   bool  `yaml:"readOnlyRootFilesystem"`
		} `yaml:"securityContext"`
	}
	deployment struct {
		Kind     string   `yaml:"kind"`
		Metadata metadata `yaml:"metadata"`
		Spec     struct {
			Replicas int `yaml:"replicas"`
			Selector struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
			Template struct {
				Metadata metadata `yaml:"metadata"`
				Spec     struct {
					AutomountServiceAccountToken *bool `yaml:"automountServiceAccountToken"`
					SecurityContext              struct {
						RunAsNonRoot bool `yaml:"runAsNonRoot"`
						RunAsUser    int  `yaml:"runAsUser"`
						RunAsGroup   int  `yaml:"runAsGroup"`
					} `yaml:"securityContext"`
					Containers []container `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	service struct {
		Kind string `yaml:"kind"`
		Spec struct {
			Selector map[string]string `yaml:"selector"`
			Ports    []struct {
				TargetPort string `yaml:"targetPort"`
			} `yaml:"ports"`
		} `yaml:"spec"`
	}
	networkPolicy struct {
		Kind string `yaml:"kind"`
		Spec struct {
			PodSelector struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"podSelector"`
			Ingress []struct {
				From  []map[string]any `yaml:"from"`
				Ports []struct {
					Port string `yaml:"port"`
				} `yaml:"ports"`
			} `yaml:"ingress"`
		} `yaml:"spec"`
	}
	pdb struct {
		Kind string `yaml:"kind"`
		Spec struct {
			MinAvailable int `yaml:"minAvailable"`
			Selector     struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
		} `yaml:"spec"`
	}
	configMap struct {
		Kind     string            `yaml:"kind"`
		Metadata metadata          `yaml:"metadata"`
		Data     map[string]string `yaml:"data"`
	}
)

// distrolessUsers maps the users of the distroless images to their ids
// (their /etc/passwd).
var distrolessUsers = map[string]int{"root": 0, "nonroot": 65532, "nobody": 65534}

// TestDeployment checks deploy/k8s/deployment.yaml against the Dockerfile
// and the service's defaults: two replicas, the image's entrypoint and
// command at a pinned tag, its user, non-root, a read-only root filesystem
// and no service account token, resource requests; API_KEYS from a Secret
// the pod cannot start without; the API on the port HTTP_ADDR defaults to,
// the only one the Service exposes; the probes and Prometheus's scrape on
// the internal port (INTERNAL_ADDR), which the NetworkPolicy keeps from
// everyone but a selected few.
func TestDeployment(t *testing.T) {
	t.Parallel()
	var d deployment
	readYAML(t, "deploy/k8s/deployment.yaml", &d)
	df := readDockerfile(t)
	spec := d.Spec.Template.Spec
	if d.Kind != "Deployment" || d.Spec.Replicas != 2 || len(spec.Containers) != 1 {
		t.Fatalf("want a Deployment of 2 replicas of one container, got %s of %d replicas, %d containers",
			d.Kind, d.Spec.Replicas, len(spec.Containers))
	}
	c := spec.Containers[0]

	// The image is the Dockerfile's: named after its entrypoint, which the
	// container keeps, with its CMD; at a version or digest, not latest.
	binary := filepath.Base(df.Entrypoint[0])
	name, tag, tagged := strings.Cut(c.Image, ":")
	if filepath.Base(name) != binary || d.Metadata.Name != binary {
		t.Errorf("image %q, Deployment %q: want both named %q, the Dockerfile's entrypoint", c.Image, d.Metadata.Name, binary)
	}
	if !tagged || tag == "" || tag == "latest" {
		t.Errorf("image %q: want a pinned version or digest, not latest (which also means no tag)", c.Image)
	}
	if c.Command != nil || !slices.Equal(c.Args, df.Cmd) {
		t.Errorf("command %q args %q: want the entrypoint kept and args %q, the Dockerfile's CMD", c.Command, c.Args, df.Cmd)
	}

	user, group, _ := strings.Cut(df.User, ":")
	uid, ok := distrolessUsers[user]
	gid := distrolessUsers[group]
	sc := spec.SecurityContext
	if !ok || !sc.RunAsNonRoot || sc.RunAsUser != uid || sc.RunAsGroup != gid || uid == 0 {
		t.Errorf("pod securityContext %+v: want runAsNonRoot and the Dockerfile's USER %s (%d:%d)", sc, df.User, uid, gid)
	}
	if csc := c.SecurityContext; !csc.ReadOnlyRootFilesystem || csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation {
		t.Errorf("container securityContext: want readOnlyRootFilesystem and no privilege escalation")
	}
	if a := spec.AutomountServiceAccountToken; a == nil || *a {
		t.Errorf("automountServiceAccountToken: want false, the service never calls the Kubernetes API")
	}
	if c.Resources.Requests["cpu"] == "" || c.Resources.Requests["memory"] == "" {
		t.Errorf("resources.requests = %v, want cpu and memory", c.Resources.Requests)
	}

	// The API on the port HTTP_ADDR defaults to, which the image exposes;
	// the probes and the scrape on INTERNAL_ADDR's.
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	cfg, err := app.LoadConfig([]string{"INTERNAL_ADDR=" + env["INTERNAL_ADDR"]})
	if err != nil {
		t.Fatal(err)
	}
	ports := map[string]int{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if got := strconv.Itoa(ports["http"]); got != port(t, cfg.HTTPAddr) || got != df.Expose {
		t.Errorf("container port http is %s; HTTP_ADDR defaults to %s, the image exposes %s", got, cfg.HTTPAddr, df.Expose)
	}
	if cfg.InternalAddr == "" || strconv.Itoa(ports["internal"]) != port(t, cfg.InternalAddr) {
		t.Fatalf("container port internal is %d, INTERNAL_ADDR %q: want the probes and /metrics on a port of their own",
			ports["internal"], cfg.InternalAddr)
	}
	for name, p := range map[string]probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p.HTTPGet.Port != "internal" {
			t.Errorf("%s probe on port %q, want internal (INTERNAL_ADDR)", name, p.HTTPGet.Port)
		}
	}
	if c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("readiness on %q, liveness on %q: want /readyz and /healthz",
			c.ReadinessProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Path)
	}
	ann := d.Spec.Template.Metadata.Annotations
	if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/port"] != strconv.Itoa(ports["internal"]) || ann["prometheus.io/path"] != "/metrics" {
		t.Errorf("pod annotations %v: want Prometheus to scrape /metrics on the internal port %d", ann, ports["internal"])
	}
	probesAnswer(t, c.ReadinessProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Path, "/metrics")

	// Service, PodDisruptionBudget and NetworkPolicy select the
	// Deployment's pods; the Service exposes the API only.
	labels := d.Spec.Template.Metadata.Labels
	if !subset(d.Spec.Selector.MatchLabels, labels) {
		t.Errorf("selector %v does not select the template's labels %v", d.Spec.Selector.MatchLabels, labels)
	}
	var svc service
	readYAML(t, "deploy/k8s/service.yaml", &svc)
	if svc.Kind != "Service" || !subset(svc.Spec.Selector, labels) || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort != "http" {
		t.Errorf("Service %+v: want it to select %v and expose the container port http only", svc.Spec, labels)
	}
	var budget pdb
	readYAML(t, "deploy/k8s/pdb.yaml", &budget)
	if budget.Kind != "PodDisruptionBudget" || !subset(budget.Spec.Selector.MatchLabels, labels) ||
		budget.Spec.MinAvailable < 1 || budget.Spec.MinAvailable >= d.Spec.Replicas {
		t.Errorf("PodDisruptionBudget %+v: want it to select %v and keep 1 to %d pods", budget.Spec, labels, d.Spec.Replicas-1)
	}
	var np networkPolicy
	readYAML(t, "deploy/k8s/networkpolicy.yaml", &np)
	if np.Kind != "NetworkPolicy" || !subset(np.Spec.PodSelector.MatchLabels, labels) {
		t.Errorf("NetworkPolicy %+v: want it to select %v", np.Spec, labels)
	}
	internalAdmitted := false
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			switch {
			case p.Port == "internal" && len(rule.From) == 0:
				t.Errorf("NetworkPolicy: the internal port is open to every source, want only selected ones")
			case p.Port == "internal":
				internalAdmitted = true
			case ports[p.Port] == 0:
				t.Errorf("NetworkPolicy admits port %q, which the container does not name", p.Port)
			}
		}
	}
	if !internalAdmitted {
		t.Errorf("NetworkPolicy: nothing may scrape the internal port")
	}

	// The service refuses to start without API_KEYS (or ALLOW_ANONYMOUS,
	// for development only): the pod takes them from a required Secret.
	fromSecret := false
	for _, e := range c.Env {
		if e.Name == "API_KEYS" {
			ref := e.ValueFrom
			fromSecret = e.Value == "" && ref != nil && ref.SecretKeyRef != nil && ref.SecretKeyRef.Name != "" &&
				ref.SecretKeyRef.Key != "" && !ref.SecretKeyRef.Optional
		}
		if e.Name == "ALLOW_ANONYMOUS" {
			t.Errorf("env sets ALLOW_ANONYMOUS: the manifests are for production, which requires API_KEYS")
		}
	}
	if !fromSecret {
		t.Errorf("env: want API_KEYS from a required secretKeyRef, the service refuses to start without it")
	}

	// The ConfigMap it reads exists.
	var cm configMap
	if len(c.EnvFrom) == 0 || c.EnvFrom[0].ConfigMapRef == nil {
		t.Fatal("envFrom: want a transport's ConfigMap first")
	}
	ref := c.EnvFrom[0].ConfigMapRef.Name
	readYAML(t, "deploy/k8s/configmap-"+strings.TrimPrefix(ref, binary+"-")+".yaml", &cm)
	if cm.Metadata.Name != ref {
		t.Errorf("envFrom names ConfigMap %q; its file defines %q", ref, cm.Metadata.Name)
	}
}

// port is the port of the listening address addr.
func port(t *testing.T, addr string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// probesAnswer runs the service as `make run` does (in-process transport,
// memory store, ALLOW_ANONYMOUS=true) with an internal listener, as the
// Deployment does, both on loopback ports, and requires 200 from each path
// on the internal one and 404 on the public one.
func probesAnswer(t *testing.T, paths ...string) {
	t.Helper()
	cfg, err := app.LoadConfig([]string{"HTTP_ADDR=127.0.0.1:0", "INTERNAL_ADDR=127.0.0.1:0", "ALLOW_ANONYMOUS=true"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.New(ctx, cfg, payments.Domain(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		if err := a.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	status := func(url string) int {
		resp, err := http.Get(url)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, path := range paths {
		testenv.WaitFor(t, 10*time.Second, "200 OK from GET "+path, func() bool {
			return status("http://"+a.InternalAddr()+path) == http.StatusOK
		})
		if code := status("http://" + a.Addr() + path); code != http.StatusNotFound {
			t.Errorf("GET %s on the public port: %d, want 404", path, code)
		}
	}
}

func subset(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}
