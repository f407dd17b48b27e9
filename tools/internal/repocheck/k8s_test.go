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
	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/k8s"
)

// distrolessUsers maps the users of the distroless images to their ids
// (their /etc/passwd).
var distrolessUsers = map[string]int{"root": 0, "nonroot": 65532, "nobody": 65534}

// TestDeployment checks deploy/k8s/deployment.yaml against the Dockerfile
// and the service's defaults: two replicas, the image's entrypoint and
// command at a pinned tag, hardened with resource requests ([hardened]);
// API_KEYS from a Secret the pod cannot start without; the API on the port
// HTTP_ADDR defaults to, the only one the Service exposes; the probes and
// Prometheus's scrape on the internal port (INTERNAL_ADDR), which the
// NetworkPolicy keeps from everyone but a selected few; a transport's
// ConfigMap read first, every ConfigMap it reads defined and required,
// the Secret read last.
func TestDeployment(t *testing.T) {
	t.Parallel()
	var d k8s.Deployment
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

	hardened(t, "deploy/k8s/deployment.yaml", d, df)

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
	for name, p := range map[string]k8s.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
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
	if !k8s.Subset(d.Spec.Selector.MatchLabels, labels) {
		t.Errorf("selector %v does not select the template's labels %v", d.Spec.Selector.MatchLabels, labels)
	}
	var svc k8s.Service
	readYAML(t, "deploy/k8s/service.yaml", &svc)
	if svc.Kind != "Service" || !k8s.Subset(svc.Spec.Selector, labels) || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort != "http" {
		t.Errorf("Service %+v: want it to select %v and expose the container port http only", svc.Spec, labels)
	}
	var budget k8s.PDB
	readYAML(t, "deploy/k8s/pdb.yaml", &budget)
	if budget.Kind != "PodDisruptionBudget" || !k8s.Subset(budget.Spec.Selector.MatchLabels, labels) ||
		budget.Spec.MinAvailable < 1 || budget.Spec.MinAvailable >= d.Spec.Replicas {
		t.Errorf("PodDisruptionBudget %+v: want it to select %v and keep 1 to %d pods", budget.Spec, labels, d.Spec.Replicas-1)
	}
	var np k8s.NetworkPolicy
	readYAML(t, "deploy/k8s/networkpolicy.yaml", &np)
	if np.Kind != "NetworkPolicy" || !k8s.Subset(np.Spec.PodSelector.MatchLabels, labels) {
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

	// The ConfigMaps it reads exist: a transport's first, then any the
	// domain's settings are in; the Secret last, its credentials
	// overriding theirs.
	var cm k8s.ConfigMap
	if len(c.EnvFrom) == 0 || c.EnvFrom[0].ConfigMapRef == nil {
		t.Fatal("envFrom: want a transport's ConfigMap first")
	}
	ref := c.EnvFrom[0].ConfigMapRef.Name
	readYAML(t, "deploy/k8s/configmap-"+strings.TrimPrefix(ref, binary+"-")+".yaml", &cm)
	if cm.Metadata.Name != ref {
		t.Errorf("envFrom names ConfigMap %q; its file defines %q", ref, cm.Metadata.Name)
	}
	checkEnvFrom(t, c, k8sObjects(t))
}

// hardened checks the pod of Deployment d, defined in file, against the
// image of the Dockerfile df: its user, non-root, the runtime's seccomp
// profile, no service account token; a read-only root filesystem, no
// privilege escalation and no capabilities; resource requests.
func hardened(t *testing.T, file string, d k8s.Deployment, df dockerfile) {
	t.Helper()
	spec := d.Spec.Template.Spec
	user, group, _ := strings.Cut(df.User, ":")
	uid, ok := distrolessUsers[user]
	gid := distrolessUsers[group]
	sc := spec.SecurityContext
	if !ok || !sc.RunAsNonRoot || sc.RunAsUser != uid || sc.RunAsGroup != gid || uid == 0 {
		t.Errorf("%s: pod securityContext %+v: want runAsNonRoot and the Dockerfile's USER %s (%d:%d)", file, sc, df.User, uid, gid)
	}
	if sc.SeccompProfile.Type != "RuntimeDefault" {
		t.Errorf("%s: seccompProfile %q, want RuntimeDefault", file, sc.SeccompProfile.Type)
	}
	if a := spec.AutomountServiceAccountToken; a == nil || *a {
		t.Errorf("%s: automountServiceAccountToken: want false, the binary never calls the Kubernetes API", file)
	}
	for _, c := range spec.Containers {
		csc := c.SecurityContext
		if !csc.ReadOnlyRootFilesystem || csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation {
			t.Errorf("%s: container %s securityContext: want readOnlyRootFilesystem and no privilege escalation", file, c.Name)
		}
		if !slices.Equal(csc.Capabilities.Drop, []string{"ALL"}) {
			t.Errorf("%s: container %s drops capabilities %q, want [ALL]", file, c.Name, csc.Capabilities.Drop)
		}
		if c.Resources.Requests["cpu"] == "" || c.Resources.Requests["memory"] == "" {
			t.Errorf("%s: container %s resources.requests = %v, want cpu and memory", file, c.Name, c.Resources.Requests)
		}
	}
}

// checkEnvFrom requires every ConfigMap container c reads with envFrom to
// be defined in objects, and not optional: a pod that starts before an
// optional one exists runs without its settings, and keeps them so. A
// Secret comes last, so that its credentials override the ConfigMaps.
func checkEnvFrom(t *testing.T, c k8s.Container, objects map[string]string) {
	t.Helper()
	for i, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			if objects["ConfigMap/"+from.ConfigMapRef.Name] == "" {
				t.Errorf("envFrom reads ConfigMap %q, which no manifest under %s defines", from.ConfigMapRef.Name, strings.Join(k8sDirs(t), " or "))
			}
			if from.ConfigMapRef.Optional {
				t.Errorf("envFrom: ConfigMap %q is optional: a pod started before it exists would run without it", from.ConfigMapRef.Name)
			}
		case from.SecretRef != nil && i != len(c.EnvFrom)-1:
			t.Errorf("envFrom: Secret %q is entry %d of %d: want it last, its credentials overriding the ConfigMaps'",
				from.SecretRef.Name, i+1, len(c.EnvFrom))
		}
	}
}

// k8sObjects maps "Kind/name" to the file (relative to the root) that
// defines the object, for every document of every manifest kubectl
// applies ([k8sDirs]): the service's under deploy/k8s and the domain's.
func k8sObjects(t *testing.T) map[string]string {
	t.Helper()
	objects := map[string]string{}
	for _, m := range k8s.Read(t, root, k8sDirs(t)...) {
		key := m.Kind + "/" + m.Name
		if prev, ok := objects[key]; ok {
			t.Errorf("%s defines %s, as %s does", m.File, key, prev)
		}
		objects[key] = m.File
	}
	return objects
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
// memory store, ALLOW_ANONYMOUS=true), on the template's own test domain,
// with an internal listener, as the Deployment does, both on loopback
// ports, and requires 200 from each path on the internal one and 404 on
// the public one.
func probesAnswer(t *testing.T, paths ...string) {
	t.Helper()
	cfg, err := app.LoadConfig([]string{"HTTP_ADDR=127.0.0.1:0", "INTERNAL_ADDR=127.0.0.1:0", "ALLOW_ANONYMOUS=true"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.New(ctx, cfg, testdomain.Domain(), slog.New(slog.NewTextHandler(io.Discard, nil)))
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
