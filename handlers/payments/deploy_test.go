package payments_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/handlers/payments"
	"github.com/onceflow/onceflow/handlers/provider"
	"github.com/onceflow/onceflow/internal/testenv/k8s"
)

// The example's deployment files, beside its code: its Kubernetes
// manifests and its compose overlay. The repository's checks
// (tools/internal/repocheck: TestK8sDomainManifests,
// TestDomainConfigMapMirrorsComposeOverlay) hold them to what any domain
// ships must be; these tests hold them to the payment provider.
const (
	k8sDir         = "../deploy/k8s"
	composeOverlay = "../compose.yml"
)

// TestK8sProvider checks the payment provider of the example's manifests
// against the provider itself: the binary's provider command on the port
// its container names http (run with those flags); readiness on a path a
// provider answers 200 on (asked of one, in memory), on port http;
// liveness on that port, not readiness, which fails while the database
// does; its database from a required Secret, under the name the command
// reads (PROVIDER_DATABASE_URL: in memory, a restart would forget every
// key); and a Service selecting its pods on port http alone, at the host
// and port of the domain ConfigMap's PAYMENT_PROVIDER_URL.
func TestK8sProvider(t *testing.T) {
	t.Parallel()
	var prov *k8s.Deployment
	services := map[string]k8s.Service{}
	var cm *k8s.ConfigMap
	for _, m := range k8s.Read(t, k8sDir, ".") {
		switch m.Kind {
		case "Deployment":
			var d k8s.Deployment
			m.Decode(t, &d)
			if cs := d.Spec.Template.Spec.Containers; len(cs) == 1 && len(cs[0].Args) > 0 && cs[0].Args[0] == "provider" {
				if prov != nil {
					t.Fatalf("Deployments %s and %s both run the provider: want one", prov.Metadata.Name, d.Metadata.Name)
				}
				prov = &d
			}
		case "Service":
			var svc k8s.Service
			m.Decode(t, &svc)
			services[m.Name] = svc
		case "ConfigMap":
			var c k8s.ConfigMap
			m.Decode(t, &c)
			if c.Data["PAYMENT_PROVIDER_URL"] != "" {
				cm = &c
			}
		}
	}
	if prov == nil {
		t.Fatalf("no Deployment of %s runs the binary's provider command", k8sDir)
	}
	pc := prov.Spec.Template.Spec.Containers[0]

	httpPort := 0
	for _, p := range pc.Ports {
		if p.Name == "http" {
			httpPort = p.ContainerPort
		}
	}
	if !slices.Equal(pc.Args, []string{"provider", "--addr", ":" + strconv.Itoa(httpPort)}) || httpPort == 0 {
		t.Fatalf("args %q, port http %d: want args [provider --addr :<port http>]", pc.Args, httpPort)
	}
	providerCommandTakes(t, pc.Args)

	if p := pc.ReadinessProbe.HTTPGet; p.Port != "http" || !providerServes(t, p.Path) {
		t.Errorf("readiness probe GET %s on port %q: want a path the provider answers 200 on (%s), on port http", p.Path, p.Port, provider.RouteReady)
	}
	if p := pc.LivenessProbe; p.TCPSocket == nil || p.TCPSocket.Port != "http" {
		t.Errorf("liveness probe %+v: want tcpSocket on port http, not /readyz, which fails while the database does", p)
	}

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
	if !providerReads(t, "PROVIDER_DATABASE_URL") {
		t.Errorf("the provider command does not read PROVIDER_DATABASE_URL, which the manifest sets")
	}

	// The Service at the ConfigMap's URL, selecting the provider's pods.
	plabels := prov.Spec.Template.Metadata.Labels
	var ps *k8s.Service
	for _, svc := range services {
		if k8s.Subset(svc.Spec.Selector, plabels) {
			ps = &svc
		}
	}
	if ps == nil || cm == nil {
		t.Fatalf("want a Service selecting the provider's pods %v and a ConfigMap setting PAYMENT_PROVIDER_URL in %s", plabels, k8sDir)
	}
	if len(ps.Spec.Ports) != 1 || ps.Spec.Ports[0].TargetPort != "http" {
		t.Fatalf("provider Service ports %+v: want the container port http only", ps.Spec.Ports)
	}
	u, err := url.Parse(cm.Data["PAYMENT_PROVIDER_URL"])
	if err != nil || u.Scheme != "http" || u.Hostname() != ps.Metadata.Name || u.Port() != strconv.Itoa(ps.Spec.Ports[0].Port) {
		t.Errorf("PAYMENT_PROVIDER_URL %q: want http://%s:%d, the provider's Service", cm.Data["PAYMENT_PROVIDER_URL"], ps.Metadata.Name, ps.Spec.Ports[0].Port)
	}
}

// TestComposeProvider checks the payment provider of the example's compose
// overlay: the binary's provider command (run with its flags), its
// records in PostgreSQL (PROVIDER_DATABASE_URL), and every service the
// overlay points at a provider pointed at it, by its service name and the
// port of its --addr.
func TestComposeProvider(t *testing.T) {
	t.Parallel()
	var compose struct {
		Services map[string]struct {
			Command     []string          `yaml:"command"`
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	readYAML(t, composeOverlay, &compose)
	const name = "provider"
	prov, ok := compose.Services[name]
	if !ok || len(prov.Command) != 3 || prov.Command[0] != "provider" || prov.Command[1] != "--addr" {
		t.Fatalf("%s: service %s runs %q: want [provider --addr :<port>]", composeOverlay, name, prov.Command)
	}
	providerCommandTakes(t, prov.Command)
	if u, err := url.Parse(prov.Environment["PROVIDER_DATABASE_URL"]); err != nil || u.Scheme != "postgres" {
		t.Errorf("%s: service %s: PROVIDER_DATABASE_URL=%q: want its records in PostgreSQL", composeOverlay, name, prov.Environment["PROVIDER_DATABASE_URL"])
	}
	want := "http://" + name + prov.Command[2]
	pointed := 0
	for svc, s := range compose.Services {
		if got, ok := s.Environment["PAYMENT_PROVIDER_URL"]; ok {
			pointed++
			if got != want {
				t.Errorf("%s: service %s: PAYMENT_PROVIDER_URL=%s, want %s", composeOverlay, svc, got, want)
			}
		}
	}
	if pointed == 0 {
		t.Errorf("%s points no service at the provider (PAYMENT_PROVIDER_URL)", composeOverlay)
	}
}

// readYAML decodes the YAML file path into v.
func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
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

// providerReads reports whether the provider command reads the variable
// name: set to a URL no database answers at, the command fails.
func providerReads(t *testing.T, name string) bool {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := payments.Domain().Commands["provider"].Run(ctx, domain.CommandEnv{
		Args: []string{"--addr", "127.0.0.1:0"}, Environ: []string{name + "=postgres://%zz"},
		Stdout: io.Discard, Stderr: io.Discard,
	})
	return err != nil && strings.Contains(err.Error(), name)
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
