package app

import (
	"errors"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/onceflow/onceflow/internal/transport"
)

func TestLoadConfigDefaults(t *testing.T) {
	cfg, err := LoadConfig(nil)
	if err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	if cfg.Transport != "gochannel" || cfg.Store != "memory" || cfg.DedupLease != 30*time.Second || cfg.HTTPAddr != ":8080" ||
		cfg.StoreBatchSize != 64 || cfg.NATSMaxAge != transport.DefaultNATSMaxAge {
		t.Fatalf("unexpected defaults: %+v", cfg)
	}
}

func TestLoadConfigErrorsNameTheVariable(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"TRANSPORT=mqtt"}, `TRANSPORT="mqtt" is not allowed: use one of gochannel, kafka, amqp, sql, nats, redisstream`},
		{[]string{"STORE=mongo"}, `STORE="mongo" is not allowed: use one of memory, redis, postgres`},
		{[]string{"DEDUP_ON_IN_PROGRESS=block"}, `DEDUP_ON_IN_PROGRESS="block" is not allowed: use one of reject, wait`},
		{[]string{"DEDUP_ON_STORE_ERROR=ignore"}, `DEDUP_ON_STORE_ERROR="ignore" is not allowed: use one of fail-closed, fail-open`},
		{[]string{"LOG_FORMAT=xml"}, `LOG_FORMAT="xml" is not allowed: use one of auto, text, json`},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=localhost:4318"}, `OTEL_EXPORTER_OTLP_ENDPOINT="localhost:4318" is not allowed: use an http:// or https:// URL`},
		{[]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=grpc://c:4317"}, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="grpc://c:4317" is not allowed: use an http:// or https:// URL`},
		{[]string{"DEDUP_LEASE=soon"}, `DEDUP_LEASE: unable to parse duration: time: invalid duration "soon"`},
		{[]string{"RETRY_MAX=many"}, `RETRY_MAX: strconv.ParseInt`},
		{[]string{"DEDUP_TTL=0s"}, `DEDUP_TTL=0s must be a positive duration`},
		{[]string{"DEDUP_LEASE=5s", "HANDLER_TIMEOUT=10s"}, `DEDUP_LEASE=5s must exceed HANDLER_TIMEOUT=10s`},
		{[]string{"TRANSPORT=kafka"}, `KAFKA_BROKERS is required when TRANSPORT=kafka`},
		{[]string{"TRANSPORT=amqp"}, `AMQP_URL is required when TRANSPORT=amqp`},
		{[]string{"TRANSPORT=sql"}, `DATABASE_URL is required when TRANSPORT=sql`},
		{[]string{"TRANSPORT=nats"}, `NATS_URL is required when TRANSPORT=nats`},
		{[]string{"TRANSPORT=redisstream"}, `REDIS_STREAM_URL or REDIS_URL is required when TRANSPORT=redisstream`},
		{[]string{"REDIS_STREAM_MAXLEN=-1"}, `REDIS_STREAM_MAXLEN=-1 must be 0 (never trim) or more`},
		{[]string{"NATS_MAX_AGE=0s"}, `NATS_MAX_AGE=0s must be a positive duration`},
		{[]string{"KAFKA_PARTITIONS=0"}, `KAFKA_PARTITIONS=0 must be at least 1`},
		{[]string{"STORE=postgres"}, `DATABASE_URL is required when STORE=postgres`},
		{[]string{"STORE=redis"}, `REDIS_URL or REDIS_ADDRS is required when STORE=redis`},
		{[]string{"DEDUP_MODE=once"}, `DEDUP_MODE="once" is not allowed: use one of lease, transaction`},
		{[]string{"DEDUP_MODE=transaction", "STORE=redis", "REDIS_URL=redis://r:6379/0"}, `DEDUP_MODE=transaction requires STORE=postgres`},
		{[]string{"PG_RECORDS_LAYOUT=sharded"}, `PG_RECORDS_LAYOUT="sharded" is not allowed: use one of rows, partitioned`},
		{[]string{"PG_PARTITION_WIDTH=0s"}, `PG_PARTITION_WIDTH=0s must be a positive duration`},
		{[]string{"PG_RECORDS_LAYOUT=partitioned", "DEDUP_MODE=transaction", "TRANSPORT=sql", "STORE=postgres", "DATABASE_URL=postgres://db/x"},
			`PG_RECORDS_LAYOUT=partitioned does not support DEDUP_MODE=transaction with TRANSPORT=sql`},
		{[]string{"REDIS_REQUIRE_DURABLE=maybe"}, `REDIS_REQUIRE_DURABLE: strconv.ParseBool`},
		{[]string{"MIGRATE_ON_START=maybe"}, `MIGRATE_ON_START: strconv.ParseBool`},
		{[]string{"REDIS_REQUIRE_DURABLE=true"}, `REDIS_REQUIRE_DURABLE=true applies to STORE=redis only (STORE="memory")`},
		{[]string{"STORE=redis", "REDIS_URL=redis://r:6379/0", "REDIS_WAIT_REPLICAS=-1"}, `REDIS_WAIT_REPLICAS=-1 must be zero (do not wait) or more`},
		{[]string{"REDIS_WAIT_REPLICAS=1"}, `REDIS_WAIT_REPLICAS=1 applies to STORE=redis only (STORE="memory")`},
		{[]string{"STORE_BATCH_SIZE=-1"}, `STORE_BATCH_SIZE=-1 must be 0 or more (0 or 1 turns batching off)`},
		{[]string{"STORE_BATCH_SIZE=lots"}, `STORE_BATCH_SIZE: strconv.ParseInt`},
		{[]string{"REDIS_WAIT_TIMEOUT=0s"}, `REDIS_WAIT_TIMEOUT=0s must be a positive duration`},
	} {
		_, err := LoadConfig(tc.env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LoadConfig(%v) error = %v, want it to contain %q", tc.env, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("LoadConfig(%v) error spans lines: %q", tc.env, err)
		}
	}
}

func TestConfigLogMasksSecrets(t *testing.T) {
	cfg, err := LoadConfig([]string{
		"STORE=postgres", "DATABASE_URL=postgres://app:s3cret@db:5432/app",
		"AMQP_URL=amqp://guest:hunter2@mq:5672/",
		"REDIS_URL=redis://:redispass@cache:6379/0",
		"ADMIN_API_KEY=adm1n-s3cret",
	})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	slog.New(slog.NewTextHandler(&b, nil)).Info("config", "config", cfg)
	out := b.String()
	for _, secret := range []string{"s3cret", "hunter2", "redispass", "adm1n"} {
		if strings.Contains(out, secret) {
			t.Errorf("logged config reveals %q: %s", secret, out)
		}
	}
	if !strings.Contains(out, "db:5432") || !strings.Contains(out, "admin_api_key_set=true") {
		t.Errorf("logged config lost the non-secret parts: %s", out)
	}
}

// The redisstream transport uses REDIS_STREAM_URL, or REDIS_URL when it is
// unset, and its start-up errors name the variable the URL came from.
func TestRedisStreamURLFallsBackToRedisURL(t *testing.T) {
	for _, tc := range []struct {
		env           []string
		wantURL, name string
	}{
		{[]string{"REDIS_URL=redis://records:6379/0"}, "redis://records:6379/0", "REDIS_URL"},
		{[]string{"REDIS_URL=redis://records:6379/0", "REDIS_STREAM_URL=redis://streams:6379/1"}, "redis://streams:6379/1", "REDIS_STREAM_URL"},
	} {
		cfg, err := LoadConfig(append([]string{"TRANSPORT=redisstream"}, tc.env...))
		if err != nil {
			t.Fatalf("%v: %v", tc.env, err)
		}
		if got := cfg.transportConfig(nil, nil, nil).RedisStreamURL; got != tc.wantURL {
			t.Errorf("%v: transport URL %q, want %q", tc.env, got, tc.wantURL)
		}
		if got := cfg.transportError(t.Context(), errors.New("refused")).Error(); !strings.HasPrefix(got, tc.name+"=") {
			t.Errorf("%v: start-up error %q does not begin with %s=", tc.env, got, tc.name)
		}
	}
}

// TestDeployEnvFilesValidate loads each deploy/*.env as the service would
// read it under docker compose.
func TestDeployEnvFilesValidate(t *testing.T) {
	files, err := filepath.Glob("../deploy/*.env")
	if err != nil || len(files) == 0 {
		t.Fatalf("deploy/*.env: %v, %d files", err, len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var environ []string
		for line := range strings.Lines(string(b)) {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				environ = append(environ, line)
			}
		}
		if _, err := LoadConfig(environ); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestDeploySettingsDeclared: every variable that deploy/*.env (or one
// of its comments, as NAME=value), the k8s ConfigMaps and Deployment, and
// the environment of the compose services that run the service set is a
// setting of Config, with a value the setting takes on its own; and each
// compose service's environment, its env file with what its environment
// block adds, is a configuration the service accepts.
func TestDeploySettingsDeclared(t *testing.T) {
	sources := map[string]map[string]string{}
	envFiles, _ := filepath.Glob("../deploy/*.env")
	for _, f := range envFiles {
		sources[f] = readEnvFile(t, f)
		sources[f+" (comments)"] = commentedSettings(t, f)
	}
	configMaps, _ := filepath.Glob("../deploy/k8s/configmap-*.yaml")
	for _, f := range configMaps {
		var cm struct{ Data map[string]string }
		readYAML(t, f, &cm)
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
	readYAML(t, "../deploy/k8s/deployment.yaml", &deployment)
	for _, c := range deployment.Spec.Template.Spec.Containers {
		vars := map[string]string{}
		for _, e := range c.Env {
			vars[e.Name] = e.Value
		}
		sources["../deploy/k8s/deployment.yaml container "+c.Name] = vars
	}
	var compose struct {
		Services map[string]struct {
			EnvFile     []string          `yaml:"env_file"`
			Environment map[string]string `yaml:"environment"`
		}
	}
	readYAML(t, "../docker-compose.yml", &compose)
	composed := 0
	for _, name := range slices.Sorted(maps.Keys(compose.Services)) {
		svc := compose.Services[name]
		if len(svc.EnvFile) == 0 || !strings.HasPrefix(svc.EnvFile[0], "deploy/") {
			continue // a backend, not the service
		}
		composed++
		src := "../docker-compose.yml service " + name
		environ := map[string]string{}
		for _, f := range svc.EnvFile {
			maps.Copy(environ, readEnvFile(t, filepath.Join("..", f)))
		}
		vars := map[string]string{}
		for k, v := range svc.Environment {
			vars[k] = interpolate(v)
		}
		sources[src] = vars
		maps.Copy(environ, vars)
		var list []string
		for k, v := range environ {
			list = append(list, k+"="+v)
		}
		if _, err := LoadConfig(list); err != nil {
			t.Errorf("%s: %v", src, err)
		}
	}
	if len(envFiles) == 0 || len(configMaps) == 0 || composed == 0 {
		t.Fatalf("%d env files, %d ConfigMaps, %d compose services of the service: want some of each", len(envFiles), len(configMaps), composed)
	}
	for _, src := range slices.Sorted(maps.Keys(sources)) {
		vars := sources[src]
		for _, k := range slices.Sorted(maps.Keys(vars)) {
			if err := checkSetting(k, vars[k]); err != nil {
				t.Errorf("%s: %v", src, err)
			}
		}
	}
}

// readEnvFile reads KEY=VALUE lines, with # comments, as compose's
// env_file does.
func readEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for line := range strings.Lines(string(b)) {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: %q is not KEY=VALUE", path, line)
		}
		vars[k] = v
	}
	return vars
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

// interpolate resolves compose's ${VAR}, ${VAR:-default} and ${VAR-default}
// as an environment that sets none of them would.
func interpolate(v string) string {
	return composeVar.ReplaceAllString(v, "$1")
}

var composeVar = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*(?::?-([^}]*))?\}`)
