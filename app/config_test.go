package app

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/transport"
)

func TestLoadConfigDefaults(t *testing.T) {
	cfg, err := LoadConfig(nil)
	if err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	// NATS_MAX_AGE's default is the nats transport's.
	if cfg.Transport != "gochannel" || cfg.Store != "memory" || cfg.DedupLease != 30*time.Second || cfg.HTTPAddr != ":8080" ||
		cfg.StoreBatchSize != 64 || cfg.NATSMaxAge != 7*24*time.Hour {
		t.Fatalf("unexpected defaults: %+v", cfg)
	}
}

func TestLoadConfigErrorsNameTheVariable(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"TRANSPORT=mqtt"}, `TRANSPORT="mqtt" is not allowed: use one of ` + strings.Join(transport.Kinds, ", ")},
		{[]string{"STORE=mongo"}, `STORE="mongo" is not allowed: use one of memory, redis, postgres`},
		{[]string{"DEDUP_ON_IN_PROGRESS=block"}, `DEDUP_ON_IN_PROGRESS="block" is not allowed: use one of reject, wait`},
		{[]string{"DEDUP_ON_STORE_ERROR=ignore"}, `DEDUP_ON_STORE_ERROR="ignore" is not allowed: use one of fail-closed, fail-open`},
		{[]string{"LOG_FORMAT=xml"}, `LOG_FORMAT="xml" is not allowed: use one of auto, text, json`},
		{[]string{"INTERNAL_ADDR=:8080"}, `INTERNAL_ADDR=":8080" must differ from HTTP_ADDR`},
		{[]string{"ADMIN_API_KEY=adm1n"}, `ADMIN_API_KEY: the key is too short (5 of 16 characters)`},
		{[]string{"MAX_MESSAGE_BYTES=-1"}, `MAX_MESSAGE_BYTES=-1 must be 0 (no limit) or more`},
		{[]string{"ADMIN_API_KEY=key-of-client-a-0123", "API_KEYS=key-of-client-a-0123:client-a"},
			`ADMIN_API_KEY is also the API_KEYS key of client "client-a"`},
		{[]string{"STORE=redis", "REDIS_URL=redis://r:6379/0", "REDIS_KEY_PREFIX={idem}:"}, `REDIS_KEY_PREFIX="{idem}:" may not hold "{"`},
		{[]string{"STORE=redis", "REDIS_URL=redis://r:6379/0", "TOPIC_PREFIX={staging}."}, `REDIS_KEY_PREFIX="{staging}.onceflow:idem:" may not hold "{"`},
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
		{[]string{"HANDLER_CONCURRENCY=0"}, `HANDLER_CONCURRENCY=0 must be at least 1`},
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
		if tc.env[0] != "TRANSPORT=mqtt" && !builtInEnv(tc.env) {
			continue // a case of a broker the build does not have
		}
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
		"ADMIN_API_KEY=adm1n-s3cret-0123",
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

// The JSON log of the configuration writes durations as the settings
// take them, not as nanoseconds.
func TestConfigLogWritesDurations(t *testing.T) {
	cfg, err := LoadConfig([]string{"DEDUP_TTL=24h"})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	slog.New(slog.NewJSONHandler(&b, nil)).Info("config", "config", cfg)
	if out := b.String(); !strings.Contains(out, `"dedup_ttl":"24h0m0s"`) {
		t.Errorf("logged config: %s, want dedup_ttl 24h0m0s", out)
	}
}

// The redisstream transport uses REDIS_STREAM_URL, or REDIS_URL when it is
// unset, and its start-up errors name the variable the URL came from.
func TestRedisStreamURLFallsBackToRedisURL(t *testing.T) {
	if !builtIn(transport.RedisStream) {
		t.Skip("the build has no redisstream transport")
	}
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

// TestDeployEnvFilesValidate loads each deploy/<kind>.env of the kinds the
// build has (transport.Kinds) as the service would read it under docker
// compose.
func TestDeployEnvFilesValidate(t *testing.T) {
	var files []string
	for _, kind := range transport.Kinds {
		f := filepath.Join("..", "deploy", kind+".env")
		if _, err := os.Stat(f); err == nil {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		t.Fatalf("no deploy/<kind>.env for any of %v", transport.Kinds)
	}
	for _, f := range files {
		if _, err := LoadConfig(envFileLines(t, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// The Redis records' prefix follows TOPIC_PREFIX and SERVICE_NAME unless
// REDIS_KEY_PREFIX names one; the defaults keep the one it always was.
func TestRedisKeyPrefix(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{nil, "onceflow:idem:"},
		{[]string{"SERVICE_NAME=billing"}, "billing:idem:"},
		{[]string{"TOPIC_PREFIX=staging.", "SERVICE_NAME=billing"}, "staging.billing:idem:"},
		{[]string{"TOPIC_PREFIX=staging.", "REDIS_KEY_PREFIX=onceflow:idem:"}, "onceflow:idem:"},
	} {
		cfg, err := LoadConfig(tc.env)
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.redisKeyPrefix(); got != tc.want {
			t.Errorf("%v: Redis key prefix %q, want %q", tc.env, got, tc.want)
		}
	}
}
