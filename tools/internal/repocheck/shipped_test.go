package repocheck

import (
	"bufio"
	"maps"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/internal/testenv/k8s"
)

// The files an operator copies are held to what a production deployment
// needs, so that copying them is safe: every image pinned by digest, TLS
// and a role of its own for PostgreSQL, no credential but a placeholder,
// the internal port and the signing secret set, and network policies
// that name who may talk to the pods and whom they may talk to.

// digestPinned matches an image reference pinned by digest, with or
// without its tag (name:tag@sha256:..., name@sha256:...).
var digestPinned = regexp.MustCompile(`^[^@\s]+@sha256:[0-9a-f]{64}$`)

// TestShippedImagesPinned: every image the compose files, the Dockerfile
// and the Kubernetes manifests pull is pinned by digest, so that a tag
// moved (or taken over) upstream changes nothing that runs. The only
// exceptions are the images built from the Dockerfile itself: a compose
// service's with a build section, and the manifests' image named after
// the binary, which is pushed by whoever deploys it (TestDeployment holds
// it to a version tag; its digest is the registry's answer to that push).
func TestShippedImagesPinned(t *testing.T) {
	t.Parallel()
	binary := filepath.Base(readDockerfile(t).Entrypoint[0])
	for _, file := range composeFiles(t) {
		var compose struct {
			Services map[string]struct {
				Image string `yaml:"image"`
				Build any    `yaml:"build"`
			} `yaml:"services"`
		}
		readYAML(t, file, &compose)
		for _, name := range slices.Sorted(maps.Keys(compose.Services)) {
			svc := compose.Services[name]
			if svc.Build != nil || svc.Image == "" {
				continue // built here, from the Dockerfile; or an overlay's additions to a service
			}
			if !digestPinned.MatchString(svc.Image) {
				t.Errorf("%s: service %s: image %q is not pinned by digest (name:tag@sha256:...)", file, name, svc.Image)
			}
		}
	}
	for _, ref := range dockerfileImages(t, readFile(t, "Dockerfile")) {
		if !digestPinned.MatchString(ref) {
			t.Errorf("Dockerfile: %q is not pinned by digest (name:tag@sha256:...)", ref)
		}
	}
	for _, m := range k8s.Read(t, root, k8sDirs(t)...) {
		if m.Kind != "Deployment" {
			continue
		}
		var d k8s.Deployment
		m.Decode(t, &d)
		for _, c := range d.Spec.Template.Spec.Containers {
			name, _, _ := strings.Cut(c.Image, "@")
			name, _, _ = strings.Cut(name, ":")
			if filepath.Base(name) == binary {
				continue // the Dockerfile's build, pushed by the deployer
			}
			if !digestPinned.MatchString(c.Image) {
				t.Errorf("%s: container %s: image %q is not pinned by digest", m.File, c.Name, c.Image)
			}
		}
	}
}

// dockerfileImages lists the images a Dockerfile pulls: its syntax
// directive's frontend, if it names one, and every FROM that is not an
// earlier stage.
func dockerfileImages(t *testing.T, src string) []string {
	t.Helper()
	var refs []string
	stages := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(src))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if d, ok := strings.CutPrefix(strings.ToLower(line), "# syntax="); ok {
			refs = append(refs, strings.TrimSpace(line[len(line)-len(d):]))
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 || !strings.EqualFold(fields[0], "FROM") {
			continue
		}
		args := fields[1:]
		for len(args) > 0 && strings.HasPrefix(args[0], "--") {
			args = args[1:]
		}
		if len(args) == 0 {
			t.Fatalf("Dockerfile: %q names no image", line)
		}
		if !stages[strings.ToLower(args[0])] {
			refs = append(refs, args[0])
		}
		if len(args) == 3 && strings.EqualFold(args[1], "AS") {
			stages[strings.ToLower(args[2])] = true
		}
	}
	return refs
}

// postgresURL finds the PostgreSQL URLs of a file, placeholders (<password>)
// and all.
var postgresURL = regexp.MustCompile(`postgres(?:ql)?://[^\s'"]+`)

// strongSSLModes are the sslmodes that encrypt every connection; the
// others (disable, allow, prefer, and none, which is prefer) may not.
var strongSSLModes = []string{"require", "verify-ca", "verify-full"}

// secretName matches the names of settings whose whole value is a
// secret: a password, a secret, a token, keys.
var secretName = regexp.MustCompile(`(^|_)(PASSWORD|SECRETS?|TOKEN|KEYS?)$`)

// placeholder is what a shipped file holds where a credential goes: the
// deployer replaces it from the secret store.
const placeholder = "CHANGE_ME"

// TestShippedDeployFilesSafe reads every file of deploy/ (env files,
// manifests, SQL) and the domain's manifests: no PostgreSQL URL with
// sslmode=disable, allow or prefer, or as its superuser (postgres); in
// deploy/ every such URL names an sslmode that encrypts; no credential in
// deploy/ but the placeholder CHANGE_ME (a default such as guest:guest
// is a credential too).
func TestShippedDeployFilesSafe(t *testing.T) {
	t.Parallel()
	files := map[string]bool{} // relative path: whether it is the service's (deploy/)
	walkFiles(t, "deploy", func(rel string) { files[rel] = true })
	for _, dir := range domainManifestDirs(t) {
		walkFiles(t, dir, func(rel string) { files[rel] = false })
	}
	for _, rel := range slices.Sorted(maps.Keys(files)) {
		if strings.HasPrefix(rel, "deploy/grafana/") {
			continue // dashboards: no connection settings
		}
		text := readFile(t, rel)
		for _, raw := range postgresURL.FindAllString(text, -1) {
			user, mode := postgresUserAndSSLMode(raw)
			if user == "postgres" {
				t.Errorf("%s: %s connects as the superuser postgres: use the service's own role (deploy/postgres/role.sql)", rel, raw)
			}
			switch {
			case slices.Contains([]string{"disable", "allow", "prefer"}, mode):
				t.Errorf("%s: %s: sslmode=%s does not encrypt every connection: use verify-full", rel, raw, mode)
			case files[rel] && !slices.Contains(strongSSLModes, mode):
				t.Errorf("%s: %s names no sslmode (pgx's default is prefer, which verifies nothing): use sslmode=verify-full", rel, raw)
			}
		}
		if !files[rel] || !strings.HasSuffix(rel, ".env") {
			continue
		}
		for k, v := range readEnvFile(t, filepath.Join(root, rel)) {
			if secretName.MatchString(k) && v != "" && v != placeholder {
				t.Errorf("%s: %s holds a value: leave %s (or nothing) for the deployer to fill from the secret store", rel, k, placeholder)
			}
			if u, err := url.Parse(v); err == nil && u.User != nil {
				p, hasPassword := u.User.Password()
				if hasPassword && p != placeholder {
					t.Errorf("%s: %s holds a password: leave %s for the deployer to fill from the secret store", rel, k, placeholder)
				}
				if !hasPassword && u.User.Username() != "" && !slices.Contains([]string{"postgres", "postgresql"}, u.Scheme) {
					t.Errorf("%s: %s holds a user but no password: a user alone may be a token; give it the password %s", rel, k, placeholder)
				}
			}
		}
	}
}

// postgresUserAndSSLMode are the user and sslmode of a PostgreSQL URL,
// read even when a placeholder keeps it from parsing; "" for none.
func postgresUserAndSSLMode(raw string) (user, mode string) {
	rest := raw[strings.Index(raw, "://")+3:]
	if at := strings.LastIndex(strings.SplitN(rest, "/", 2)[0], "@"); at >= 0 {
		user, _, _ = strings.Cut(rest[:at], ":")
	}
	if m := regexp.MustCompile(`[?&]sslmode=([a-z-]+)`).FindStringSubmatch(raw); m != nil {
		mode = m[1]
	}
	return user, mode
}

// networkPolicy is the whole of a NetworkPolicy these checks read,
// egress included.
type networkPolicy struct {
	Spec struct {
		PodSelector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"podSelector"`
		PolicyTypes []string     `yaml:"policyTypes"`
		Ingress     []policyRule `yaml:"ingress"`
		Egress      []policyRule `yaml:"egress"`
	} `yaml:"spec"`
}

// policyRule is an ingress rule (From) or an egress rule (To).
type policyRule struct {
	From  []policyPeer `yaml:"from"`
	To    []policyPeer `yaml:"to"`
	Ports []struct {
		Port     any    `yaml:"port"`
		Protocol string `yaml:"protocol"`
	} `yaml:"ports"`
}

// policyPeer is one peer of a rule.
type policyPeer struct {
	PodSelector *struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	} `yaml:"podSelector"`
	NamespaceSelector *struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	} `yaml:"namespaceSelector"`
	IPBlock *struct {
		CIDR string `yaml:"cidr"`
	} `yaml:"ipBlock"`
}

// TestShippedK8sSafe checks the manifests kubectl applies (k8sDirs): no
// ConfigMap holds a secret (a password, secret, token or key, or a URL
// with a password: anyone who may read the namespace's configuration
// reads them); the service's Deployment sets INTERNAL_ADDR and takes
// MESSAGE_SIGNING_SECRETS from a required Secret, never as a literal; no
// NetworkPolicy admits a whole namespace (a namespaceSelector without a
// podSelector beside it); the service's policy admits to the internal
// port only pods it selects by label (the scraper), and restricts
// egress, every rule naming its destinations and ports.
func TestShippedK8sSafe(t *testing.T) {
	t.Parallel()
	var svc k8s.Deployment
	readYAML(t, "deploy/k8s/deployment.yaml", &svc)
	labels := svc.Spec.Template.Metadata.Labels
	for _, m := range k8s.Read(t, root, k8sDirs(t)...) {
		at := m.File + ": " + m.Kind + "/" + m.Name
		switch m.Kind {
		case "ConfigMap":
			var cm k8s.ConfigMap
			m.Decode(t, &cm)
			for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
				if secretName.MatchString(k) && cm.Data[k] != "" || holdsPassword(cm.Data[k]) {
					t.Errorf("%s: %s holds a secret: put it in a Secret", at, k)
				}
			}
		case "NetworkPolicy":
			var np networkPolicy
			m.Decode(t, &np)
			for _, rule := range np.Spec.Ingress {
				for _, peer := range rule.From {
					if peer.NamespaceSelector != nil && (peer.PodSelector == nil || len(peer.PodSelector.MatchLabels) == 0) {
						t.Errorf("%s admits every pod of the namespaces %v: add a podSelector to the same peer", at, peer.NamespaceSelector.MatchLabels)
					}
				}
			}
			if k8s.Subset(np.Spec.PodSelector.MatchLabels, labels) {
				checkServicePolicy(t, at, np)
			}
		}
	}

	c := svc.Spec.Template.Spec.Containers[0]
	var internalAddr string
	signing := false
	for _, e := range c.Env {
		switch e.Name {
		case "INTERNAL_ADDR":
			internalAddr = e.Value
		case "MESSAGE_SIGNING_SECRETS":
			ref := e.ValueFrom
			signing = e.Value == "" && ref != nil && ref.SecretKeyRef != nil && ref.SecretKeyRef.Name != "" &&
				ref.SecretKeyRef.Key != "" && !ref.SecretKeyRef.Optional
		}
	}
	if internalAddr == "" {
		t.Error("deploy/k8s/deployment.yaml: INTERNAL_ADDR unset: /metrics, the probes and the key admin would be served on the API's port")
	}
	if !signing {
		t.Error("deploy/k8s/deployment.yaml: want MESSAGE_SIGNING_SECRETS from a required secretKeyRef: without it whoever may publish may take keys")
	}
}

// checkServicePolicy checks the NetworkPolicy at that selects the
// service's pods: the internal port admitted only from peers a
// podSelector names; Egress restricted, every rule naming destinations
// and ports.
func checkServicePolicy(t *testing.T, at string, np networkPolicy) {
	t.Helper()
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			if p.Port != "internal" {
				continue
			}
			for _, peer := range rule.From {
				if peer.PodSelector == nil || len(peer.PodSelector.MatchLabels) == 0 {
					t.Errorf("%s admits %+v to the internal port: want only pods selected by label (the scraper)", at, peer)
				}
			}
		}
	}
	if !slices.Contains(np.Spec.PolicyTypes, "Egress") || len(np.Spec.Egress) == 0 {
		t.Errorf("%s: policyTypes %v: want Egress restricted to the backends and DNS", at, np.Spec.PolicyTypes)
	}
	for i, rule := range np.Spec.Egress {
		if len(rule.To) == 0 || len(rule.Ports) == 0 {
			t.Errorf("%s: egress rule %d admits every destination or every port: name both", at, i+1)
		}
		for _, peer := range rule.To {
			if peer.IPBlock != nil && (peer.IPBlock.CIDR == "0.0.0.0/0" || peer.IPBlock.CIDR == "::/0") {
				t.Errorf("%s: egress rule %d admits %s, every address", at, i+1, peer.IPBlock.CIDR)
			}
		}
	}
}

// TestComposeInternalAddr: every compose service that runs the service
// sets INTERNAL_ADDR, so that /metrics and the key admin are not on the
// API's port there either, and publishes ports on loopback only.
func TestComposeInternalAddr(t *testing.T) {
	t.Parallel()
	var base composeServices
	readYAML(t, "docker-compose.yml", &base)
	for _, name := range slices.Sorted(maps.Keys(base.Services)) {
		svc := base.Services[name]
		if !runsTheService(svc.EnvFile) {
			continue
		}
		set := svc.settings(t)
		if set["INTERNAL_ADDR"] == "" || set["INTERNAL_ADDR"] == set["HTTP_ADDR"] {
			t.Errorf("docker-compose.yml: service %s: INTERNAL_ADDR=%q: want a port of its own", name, set["INTERNAL_ADDR"])
		}
	}
	for _, file := range composeFiles(t) {
		var compose struct {
			Services map[string]struct {
				Ports []string `yaml:"ports"`
			} `yaml:"services"`
		}
		readYAML(t, file, &compose)
		for name, svc := range compose.Services {
			for _, p := range svc.Ports {
				if !strings.HasPrefix(p, "127.0.0.1:") {
					t.Errorf("%s: service %s publishes %q: bind it to 127.0.0.1", file, name, p)
				}
			}
		}
	}
}
