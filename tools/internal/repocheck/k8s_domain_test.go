package repocheck

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/internal/testenv/k8s"
)

// TestK8sDomainManifests checks what the domain ships for Kubernetes (the
// manifests of [domainManifestDirs]) against the service's manifests and
// the binary, whatever the domain: its ConfigMap, which the service's
// Deployment reads, is there; each of its Deployments runs the service's
// image, hardened as the service is ([hardened]), as a command of the
// binary with flags that command takes ([checkDomainContainer]); its
// selectors and the service's keep their pods apart; each Service selects
// one of its Deployments' pods on a port their container names
// ([checkDomainService]); a NetworkPolicy per Deployment admits the
// service's pods only ([checkDomainPolicy]); and a URL of its ConfigMap whose host is one of
// its Services names that Service's port. A domain with no services of its
// own (the fork check's shop) ships its ConfigMap alone.
func TestK8sDomainManifests(t *testing.T) {
	t.Parallel()
	var svc k8s.Deployment
	readYAML(t, "deploy/k8s/deployment.yaml", &svc)
	if len(svc.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("deploy/k8s/deployment.yaml: %d containers, want the service's one", len(svc.Spec.Template.Spec.Containers))
	}
	c := svc.Spec.Template.Spec.Containers[0]
	labels := svc.Spec.Template.Metadata.Labels
	df := readDockerfile(t)
	binary := filepath.Base(df.Entrypoint[0])
	objects := k8sObjects(t)

	var (
		// Each by where it is defined ("file: Kind/name"), ConfigMaps by name.
		deployments = map[string]k8s.Deployment{}
		services    = map[string]k8s.Service{}
		policies    = map[string]k8s.NetworkPolicy{}
		configMaps  = map[string]k8s.ConfigMap{}
	)
	for _, m := range k8s.Read(t, root, domainManifestDirs(t)...) {
		at := m.File + ": " + m.Kind + "/" + m.Name
		switch m.Kind {
		case "Deployment":
			collect(t, m, at, deployments)
		case "Service":
			collect(t, m, at, services)
		case "NetworkPolicy":
			collect(t, m, at, policies)
		case "ConfigMap":
			collect(t, m, m.Name, configMaps)
		default:
			t.Errorf("%s: this check knows Deployments, Services, NetworkPolicies and ConfigMaps: teach it what a %s must be before a domain ships one", at, m.Kind)
		}
	}

	// The domain's ConfigMap, among its manifests, and read by the
	// service's Deployment (required: checkEnvFrom, in TestDeployment).
	name := domainConfigMap(binary)
	cm, ok := configMaps[name]
	if !ok {
		t.Errorf("no manifest of %v defines ConfigMap %q, the domain's settings (empty for a domain with none), which deploy/k8s/deployment.yaml reads; it is in %q",
			domainManifestDirs(t), name, objects["ConfigMap/"+name])
	}
	reads := false
	for _, from := range c.EnvFrom {
		reads = reads || from.ConfigMapRef != nil && from.ConfigMapRef.Name == name
	}
	if !reads {
		t.Errorf("deploy/k8s/deployment.yaml does not read ConfigMap %q, the domain's settings", name)
	}

	dirs := binaryDirs(t)
	bin := binaryFacts{commands: onceflowCommands(t, dirs), routes: serviceRoutes(t, dirs), reads: envReads(t, dirs)}
	// The service's selectors: its Deployment's, and those of its Service,
	// PodDisruptionBudget and NetworkPolicy.
	var (
		api    k8s.Service
		budget k8s.PDB
		np     k8s.NetworkPolicy
	)
	readYAML(t, "deploy/k8s/service.yaml", &api)
	readYAML(t, "deploy/k8s/pdb.yaml", &budget)
	readYAML(t, "deploy/k8s/networkpolicy.yaml", &np)
	serviceSelectors := map[string]map[string]string{
		"deploy/k8s/deployment.yaml": svc.Spec.Selector.MatchLabels, "deploy/k8s/service.yaml": api.Spec.Selector,
		"deploy/k8s/pdb.yaml": budget.Spec.Selector.MatchLabels, "deploy/k8s/networkpolicy.yaml": np.Spec.PodSelector.MatchLabels,
	}

	for _, at := range slices.Sorted(maps.Keys(deployments)) {
		d := deployments[at]
		spec := d.Spec.Template.Spec
		if d.Spec.Replicas < 1 || len(spec.Containers) != 1 {
			t.Errorf("%s: %d replicas of %d containers, want at least 1 replica of one container", at, d.Spec.Replicas, len(spec.Containers))
			continue
		}
		hardened(t, at, d, df)
		checkDomainContainer(t, at, spec.Containers[0], c.Image, bin, objects)

		// Its selectors and the service's keep their pods apart.
		dlabels := d.Spec.Template.Metadata.Labels
		if !k8s.Subset(d.Spec.Selector.MatchLabels, dlabels) {
			t.Errorf("%s: selector %v does not select the template's labels %v", at, d.Spec.Selector.MatchLabels, dlabels)
		}
		if k8s.Subset(d.Spec.Selector.MatchLabels, labels) {
			t.Errorf("%s: selector %v picks the service's pods %v too", at, d.Spec.Selector.MatchLabels, labels)
		}
		for _, file := range slices.Sorted(maps.Keys(serviceSelectors)) {
			if k8s.Subset(serviceSelectors[file], dlabels) {
				t.Errorf("%s selects %v, which picks the pods %v of %s too", file, serviceSelectors[file], dlabels, at)
			}
		}

		// A NetworkPolicy admits the service's pods to them, and no one
		// else (checkDomainPolicy).
		guarded := false
		for _, p := range policies {
			guarded = guarded || k8s.Subset(p.Spec.PodSelector.MatchLabels, dlabels)
		}
		if !guarded {
			t.Errorf("%s: no NetworkPolicy of the domain selects its pods %v: want one admitting the service's pods only", at, dlabels)
		}
	}

	for _, at := range slices.Sorted(maps.Keys(services)) {
		checkDomainService(t, at, services[at], deployments, labels)
	}
	for _, at := range slices.Sorted(maps.Keys(policies)) {
		checkDomainPolicy(t, at, policies[at], deployments, labels)
	}

	// A URL of the domain's settings at one of its Services names that
	// Service's port.
	for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
		u, err := url.Parse(cm.Data[k])
		if err != nil || u.Host == "" {
			continue // not a URL
		}
		for at, s := range services {
			if u.Hostname() != s.Metadata.Name {
				continue
			}
			if !slices.ContainsFunc(s.Spec.Ports, func(p k8s.ServicePort) bool { return strconv.Itoa(p.Port) == u.Port() }) {
				t.Errorf("ConfigMap %s: %s=%s: want a port of the Service it names (%s), not %q", name, k, cm.Data[k], at, u.Port())
			}
		}
	}
}

// domainConfigMap is the name of the ConfigMap of the domain's settings,
// which deploy/k8s/deployment.yaml reads and the domain ships.
func domainConfigMap(binary string) string { return binary + "-domain" }

// binaryFacts are what the binary's packages ([binaryDirs]) have: the
// commands and their flags, the routes served, the variables read.
type binaryFacts struct {
	commands map[string]map[string]bool
	routes   *http.ServeMux
	reads    map[string]bool
}

// credentialName matches the names of variables whose values may hold a
// password: a URL (user:password@) or DSN, a password, secret, token or
// key.
var credentialName = regexp.MustCompile(`(^|_)(URLS?|DSN|PASSWORD|SECRET|TOKEN|KEYS?)($|_)`)

// checkDomainContainer checks container c of the domain's Deployment at:
// the service's image; the image's entrypoint kept, args a command of the
// binary and flags that command takes; readiness asked on a port the
// container names, at a route the binary serves; liveness on a named port
// too, never the readiness check (a restart cannot cure what fails it,
// such as a database down); every variable one the binary reads, and
// each that may hold a password from a required Secret; every ConfigMap
// it reads defined and required (checkEnvFrom).
func checkDomainContainer(t *testing.T, at string, c k8s.Container, image string, bin binaryFacts, objects map[string]string) {
	t.Helper()
	if c.Image != image {
		t.Errorf("%s: image %q, the service's %q: want the same build", at, c.Image, image)
	}
	if c.Command != nil || len(c.Args) == 0 {
		t.Errorf("%s: command %q args %q: want the entrypoint kept and args naming one of its commands", at, c.Command, c.Args)
	} else if flags, ok := bin.commands[c.Args[0]]; !ok {
		t.Errorf("%s: args %q: the binary has no command %q", at, c.Args, c.Args[0])
	} else {
		for _, a := range c.Args[1:] {
			if name, isFlag := strings.CutPrefix(a, "-"); isFlag {
				name, _, _ = strings.Cut(strings.TrimPrefix(name, "-"), "=")
				if !flags[name] {
					t.Errorf("%s: args %q: %s takes no flag -%s", at, c.Args, c.Args[0], name)
				}
			}
		}
	}

	ready := c.ReadinessProbe.HTTPGet
	if portNumber(c, ready.Port) == 0 || !serves(bin.routes, ready.Path) {
		t.Errorf("%s: readiness probe GET %q on port %q: want a route the binary serves, on a port the container names", at, ready.Path, ready.Port)
	}
	switch live := c.LivenessProbe; {
	case live.TCPSocket != nil:
		if portNumber(c, live.TCPSocket.Port) == 0 {
			t.Errorf("%s: liveness probe on port %q, which the container does not name", at, live.TCPSocket.Port)
		}
	case live.HTTPGet.Path == ready.Path && live.HTTPGet.Port == ready.Port:
		t.Errorf("%s: liveness probe GET %s, the readiness check: it fails while a dependency does, which a restart cannot cure", at, ready.Path)
	case portNumber(c, live.HTTPGet.Port) == 0 || !serves(bin.routes, live.HTTPGet.Path):
		t.Errorf("%s: liveness probe %+v: want tcpSocket, or GET on a route the binary serves, on a port the container names", at, live)
	}

	for _, e := range c.Env {
		if !bin.reads[e.Name] {
			t.Errorf("%s: env sets %s, which the binary's packages do not read", at, e.Name)
		}
		ref := e.ValueFrom
		fromSecret := e.Value == "" && ref != nil && ref.SecretKeyRef != nil && ref.SecretKeyRef.Name != "" &&
			ref.SecretKeyRef.Key != "" && !ref.SecretKeyRef.Optional
		if (credentialName.MatchString(e.Name) || holdsPassword(e.Value)) && !fromSecret {
			t.Errorf("%s: env %s may hold a password: want it from a required secretKeyRef", at, e.Name)
		}
	}
	checkEnvFrom(t, c, objects)
}

// checkDomainService checks the domain's Service at: it selects the pods
// of one of the domain's Deployments, none of the service's (labels), on
// ports their container names.
func checkDomainService(t *testing.T, at string, s k8s.Service, deployments map[string]k8s.Deployment, labels map[string]string) {
	t.Helper()
	target, ok := selected(deployments, s.Spec.Selector)
	if !ok {
		t.Errorf("%s: selector %v: want the pods of one Deployment of the domain", at, s.Spec.Selector)
		return
	}
	if k8s.Subset(s.Spec.Selector, labels) {
		t.Errorf("%s: selector %v picks the service's pods %v", at, s.Spec.Selector, labels)
	}
	if len(s.Spec.Ports) == 0 {
		t.Errorf("%s exposes no port", at)
	}
	for _, p := range s.Spec.Ports {
		if p.TargetPort == "" || portNumber(target, p.TargetPort) == 0 {
			t.Errorf("%s: port %d targets %q: want a port the container of the Deployment it selects names", at, p.Port, p.TargetPort)
		}
	}
}

// checkDomainPolicy checks the domain's NetworkPolicy at: it selects the
// pods of one of the domain's Deployments and restricts their Ingress to
// the service's pods (labels), on ports their container names.
func checkDomainPolicy(t *testing.T, at string, np k8s.NetworkPolicy, deployments map[string]k8s.Deployment, labels map[string]string) {
	t.Helper()
	target, ok := selected(deployments, np.Spec.PodSelector.MatchLabels)
	if !ok || !slices.Contains(np.Spec.PolicyTypes, "Ingress") || len(np.Spec.Ingress) == 0 {
		t.Errorf("%s: %+v: want it to select the pods of one Deployment of the domain and restrict their Ingress", at, np.Spec)
		return
	}
	if k8s.Subset(np.Spec.PodSelector.MatchLabels, labels) {
		t.Errorf("%s: selector %v picks the service's pods %v", at, np.Spec.PodSelector.MatchLabels, labels)
	}
	for _, rule := range np.Spec.Ingress {
		if len(rule.From) == 0 || len(rule.Ports) == 0 {
			t.Errorf("%s: a rule admits every source or every port: want the service's pods, on named ports", at)
		}
		for _, peer := range rule.From {
			if len(peer) != 1 || !k8s.Subset(podSelectorLabels(peer), labels) {
				t.Errorf("%s admits %v: want the service's pods (%v) only", at, peer, labels)
			}
		}
		for _, p := range rule.Ports {
			if portNumber(target, p.Port) == 0 {
				t.Errorf("%s admits port %q, which the container of the Deployment it selects does not name", at, p.Port)
			}
		}
	}
}

// selected is the container of the one Deployment of deployments whose
// pods sel selects; false when none does, or more than one.
func selected(deployments map[string]k8s.Deployment, sel map[string]string) (k8s.Container, bool) {
	var found []k8s.Container
	for _, d := range deployments {
		if k8s.Subset(sel, d.Spec.Template.Metadata.Labels) && len(d.Spec.Template.Spec.Containers) == 1 {
			found = append(found, d.Spec.Template.Spec.Containers[0])
		}
	}
	if len(found) != 1 {
		return k8s.Container{}, false
	}
	return found[0], true
}

// portNumber is the number of the port of c named name; 0 if it names
// none so.
func portNumber(c k8s.Container, name string) int {
	for _, p := range c.Ports {
		if p.Name == name && name != "" {
			return p.ContainerPort
		}
	}
	return 0
}

// serves reports whether the binary's routes answer GET path.
func serves(routes *http.ServeMux, path string) bool {
	if !strings.HasPrefix(path, "/") {
		return false
	}
	_, pattern := routes.Handler(httptest.NewRequest(http.MethodGet, path, nil))
	return pattern != ""
}

// holdsPassword reports whether v is a URL with a password.
func holdsPassword(v string) bool {
	u, err := url.Parse(v)
	if err != nil || u.User == nil {
		return false
	}
	_, ok := u.User.Password()
	return ok
}

// podSelectorLabels is the matchLabels of a NetworkPolicy peer's
// podSelector: nil for a peer of another kind (namespaceSelector, ipBlock).
func podSelectorLabels(peer map[string]any) map[string]string {
	sel, _ := peer["podSelector"].(map[string]any)
	match, _ := sel["matchLabels"].(map[string]any)
	labels := map[string]string{}
	for k, v := range match {
		s, _ := v.(string)
		labels[k] = s
	}
	return labels
}

// envReads lists the variables the Go files (tests aside) of dirs read:
// os.Getenv or a domain's Getenv of a quoted name, LookupEnv, and
// app.Config's env:"…" tags.
func envReads(t *testing.T, dirs []string) map[string]bool {
	t.Helper()
	reads := map[string]bool{}
	eachSource(t, dirs, func(src string) {
		for _, re := range []*regexp.Regexp{envTag, getenvCall} {
			for _, m := range re.FindAllStringSubmatch(src, -1) {
				reads[m[1]] = true
			}
		}
	})
	return reads
}

// collect decodes m into a T and adds it to into under key.
func collect[T any](t *testing.T, m k8s.Manifest, key string, into map[string]T) {
	t.Helper()
	var v T
	m.Decode(t, &v)
	into[key] = v
}
