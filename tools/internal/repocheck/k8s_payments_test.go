package repocheck

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/handlers/payments"
	"github.com/onceflow/onceflow/handlers/provider"
)

// The payments example's manifests, beside the service's: a fork that
// replaces the example deletes the directory, and this file with it.
const k8sPayments = "deploy/k8s/payments/"

// TestK8sPaymentsProvider checks the payment provider of deploy/k8s/payments
// against the service's Deployment and the provider itself: the same
// image, hardened the same way, running the binary's provider command on
// the port it names http; readiness on a path the provider serves (asked
// of one, in memory); its database from a required Secret, under the name
// the command reads; a Service at the host and port of the ConfigMap's
// PAYMENT_PROVIDER_URL, which the service's Deployment reads; selectors
// that keep the provider's pods and the service's apart; and a
// NetworkPolicy that admits the service's pods only, on that port.
func TestK8sPaymentsProvider(t *testing.T) {
	t.Parallel()
	var svc, prov deployment
	readYAML(t, "deploy/k8s/deployment.yaml", &svc)
	readYAML(t, k8sPayments+"provider-deployment.yaml", &prov)
	df := readDockerfile(t)
	pspec := prov.Spec.Template.Spec
	if prov.Kind != "Deployment" || prov.Spec.Replicas < 1 || len(pspec.Containers) != 1 || len(svc.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("want a Deployment of at least 1 replica of one container beside the service's one, got %s of %d replicas, %d containers",
			prov.Kind, prov.Spec.Replicas, len(pspec.Containers))
	}
	c, pc := svc.Spec.Template.Spec.Containers[0], pspec.Containers[0]
	hardened(t, k8sPayments+"provider-deployment.yaml", prov, df)

	// The service's build, its provider command listening on port http.
	if pc.Image != c.Image {
		t.Errorf("provider image %q, the service's %q: want the same build", pc.Image, c.Image)
	}
	httpPort := 0
	for _, p := range pc.Ports {
		if p.Name == "http" {
			httpPort = p.ContainerPort
		}
	}
	addr := ":" + strconv.Itoa(httpPort)
	if pc.Command != nil || !slices.Equal(pc.Args, []string{"provider", "--addr", addr}) || httpPort == 0 {
		t.Fatalf("command %q args %q, port http %d: want the entrypoint kept and args [provider --addr :<port http>]",
			pc.Command, pc.Args, httpPort)
	}
	providerCommandTakes(t, pc.Args)

	// Readiness on a path the provider serves; liveness, which must not
	// ask the database, on its port.
	if p := pc.ReadinessProbe.HTTPGet; p.Port != "http" || !providerServes(t, p.Path) {
		t.Errorf("readiness probe GET %s on port %q: want a path the provider answers 200 on (%s), on port http", p.Path, p.Port, provider.RouteReady)
	}
	if p := pc.LivenessProbe; p.TCPSocket == nil || p.TCPSocket.Port != "http" {
		t.Errorf("liveness probe %+v: want tcpSocket on port http, not /readyz, which fails while the database does", p)
	}

	// PROVIDER_DATABASE_URL, which may hold a password, from a required
	// Secret: memory would forget every key on a restart.
	fromSecret := false
	for _, e := range pc.Env {
		if e.Name == "PROVIDER_DATABASE_URL" {
			ref := e.ValueFrom
			fromSecret = e.Value == "" && ref != nil && ref.SecretKeyRef != nil && ref.SecretKeyRef.Name != "" &&
				ref.SecretKeyRef.Key != "" && !ref.SecretKeyRef.Optional
		}
	}
	if !fromSecret {
		t.Errorf("env: want PROVIDER_DATABASE_URL from a required secretKeyRef")
	}
	if src := readFile(t, "handlers/provider/server.go"); !strings.Contains(src, `Getenv("PROVIDER_DATABASE_URL")`) {
		t.Errorf("handlers/provider/server.go no longer reads PROVIDER_DATABASE_URL, which the manifest sets")
	}

	// The Service at the ConfigMap's URL, selecting the provider's pods.
	var ps service
	readYAML(t, k8sPayments+"provider-service.yaml", &ps)
	var cm configMap
	readYAML(t, k8sPayments+"configmap.yaml", &cm)
	u, err := url.Parse(cm.Data["PAYMENT_PROVIDER_URL"])
	if err != nil {
		t.Fatal(err)
	}
	plabels, labels := prov.Spec.Template.Metadata.Labels, svc.Spec.Template.Metadata.Labels
	if ps.Kind != "Service" || len(ps.Spec.Ports) != 1 || !subset(ps.Spec.Selector, plabels) || ps.Spec.Ports[0].TargetPort != "http" {
		t.Errorf("provider Service %+v: want it to select %v on the container port http", ps.Spec, plabels)
	} else if u.Scheme != "http" || u.Hostname() != ps.Metadata.Name || u.Port() != strconv.Itoa(ps.Spec.Ports[0].Port) {
		t.Errorf("PAYMENT_PROVIDER_URL %q: want http://%s:%d, the provider's Service", u, ps.Metadata.Name, ps.Spec.Ports[0].Port)
	}
	if !subset(prov.Spec.Selector.MatchLabels, plabels) {
		t.Errorf("provider selector %v does not select the template's labels %v", prov.Spec.Selector.MatchLabels, plabels)
	}
	reads := false
	for _, from := range c.EnvFrom {
		reads = reads || from.ConfigMapRef != nil && from.ConfigMapRef.Name == cm.Metadata.Name
	}
	if !reads {
		t.Errorf("deployment.yaml does not read ConfigMap %q: each replica would charge a provider of its own", cm.Metadata.Name)
	}

	// Neither's selectors pick the other's pods: the API's Service, PDB
	// and NetworkPolicy select the service's only.
	var api service
	readYAML(t, "deploy/k8s/service.yaml", &api)
	var budget pdb
	readYAML(t, "deploy/k8s/pdb.yaml", &budget)
	var np, pnp networkPolicy
	readYAML(t, "deploy/k8s/networkpolicy.yaml", &np)
	readYAML(t, k8sPayments+"provider-networkpolicy.yaml", &pnp)
	for name, sel := range map[string]map[string]string{
		"deployment.yaml": svc.Spec.Selector.MatchLabels, "service.yaml": api.Spec.Selector,
		"pdb.yaml": budget.Spec.Selector.MatchLabels, "networkpolicy.yaml": np.Spec.PodSelector.MatchLabels,
	} {
		if subset(sel, plabels) {
			t.Errorf("%s selects %v, which picks the provider's pods %v too", name, sel, plabels)
		}
	}
	if subset(ps.Spec.Selector, labels) || subset(prov.Spec.Selector.MatchLabels, labels) || subset(pnp.Spec.PodSelector.MatchLabels, labels) {
		t.Errorf("a provider selector picks the service's pods %v", labels)
	}

	// Ingress to the provider from the service's pods, on port http only.
	if pnp.Kind != "NetworkPolicy" || !subset(pnp.Spec.PodSelector.MatchLabels, plabels) ||
		!slices.Contains(pnp.Spec.PolicyTypes, "Ingress") || len(pnp.Spec.Ingress) == 0 {
		t.Fatalf("provider NetworkPolicy %+v: want it to select %v and restrict Ingress", pnp.Spec, plabels)
	}
	for _, rule := range pnp.Spec.Ingress {
		if len(rule.From) == 0 || len(rule.Ports) == 0 {
			t.Errorf("provider NetworkPolicy: a rule admits every source or every port: want the service's pods, on http")
		}
		for _, peer := range rule.From {
			if len(peer) != 1 || !subset(podSelectorLabels(peer), labels) {
				t.Errorf("provider NetworkPolicy admits %v: want the service's pods (%v) only", peer, labels)
			}
		}
		for _, p := range rule.Ports {
			if p.Port != "http" {
				t.Errorf("provider NetworkPolicy admits port %q, want http only", p.Port)
			}
		}
	}
}

// providerCommandTakes runs the binary's command args[0] with the flags of
// args, but on a loopback port of its own and with a context already
// done: it fails if the command, or one of its flags, is not the binary's.
func providerCommandTakes(t *testing.T, args []string) {
	t.Helper()
	cmd, ok := payments.Domain().Commands[args[0]]
	if !ok {
		t.Fatalf("the binary has no command %q", args[0])
	}
	local := slices.Clone(args[1:])
	if i := slices.Index(local, "--addr"); i >= 0 && i+1 < len(local) {
		local[i+1] = "127.0.0.1:0"
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := cmd.Run(ctx, domain.CommandEnv{Args: local, Stdout: io.Discard, Stderr: io.Discard}); err != nil {
		t.Errorf("onceflow %s: %v", strings.Join(args, " "), err)
	}
}

// providerServes reports whether a provider, in memory, answers GET path
// with 200.
func providerServes(t *testing.T, path string) bool {
	t.Helper()
	p, err := provider.New(context.Background(), provider.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return path != "" && rec.Code == http.StatusOK
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

// TestPaymentsConfigMapMirrorsComposeEnv: the payments example's settings
// in Kubernetes, deploy/k8s/payments/configmap.yaml, have the same keys and
// values as in compose, deploy/payments/compose.env, but for credentials;
// each is a setting the example reads.
func TestPaymentsConfigMapMirrorsComposeEnv(t *testing.T) {
	t.Parallel()
	want := readEnvFile(t, filepath.Join(root, "deploy", "payments", "compose.env"))
	var cm configMap
	readYAML(t, k8sPayments+"configmap.yaml", &cm)
	binary := filepath.Base(readDockerfile(t).Entrypoint[0])
	if cm.Kind != "ConfigMap" || cm.Metadata.Name != binary+"-payments" {
		t.Errorf("%sconfigmap.yaml: %s %q, want ConfigMap %q", k8sPayments, cm.Kind, cm.Metadata.Name, binary+"-payments")
	}
	var src strings.Builder
	walkGo(t, "handlers/payments", func(rel, s string) {
		if !strings.HasSuffix(rel, "_test.go") {
			src.WriteString(s)
		}
	})
	for k := range want {
		if !strings.Contains(src.String(), `Getenv("`+k+`")`) {
			t.Errorf("deploy/payments/compose.env sets %s, which handlers/payments does not read", k)
		}
	}
	compareMirror(t, k8sPayments+"configmap.yaml", cm.Data, "deploy/payments/compose.env", want)
}
