package app

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/internal/testenv"
)

// warningsOf loads environ and returns its warnings.
func warningsOf(t *testing.T, environ ...string) []string {
	t.Helper()
	cfg, err := LoadConfig(environ)
	if err != nil {
		t.Fatalf("%q: %v", environ, err)
	}
	return cfg.Warnings()
}

// signed is a MESSAGE_SIGNING_SECRETS setting the service takes.
const signed = "MESSAGE_SIGNING_SECRETS=0123456789abcdef0123456789abcdef"

// Each rule warns of its setting when it is left open, in one line that
// names the setting, and not when it is closed; a backend the service
// does not open is not warned of.
func TestConfigWarnings(t *testing.T) {
	const pg = "DATABASE_URL=postgres://onceflow:pw@db.example:5432/onceflow"
	for _, tc := range []struct {
		name    string
		environ []string
		want    string // the setting the one warning names; "" for none
	}{
		{"sslmode=disable", []string{pg + "?sslmode=disable"}, "DATABASE_URL has sslmode=disable"},
		{"sslmode=prefer", []string{pg + "?sslmode=prefer"}, "DATABASE_URL has sslmode=prefer"},
		{"sslmode=allow", []string{pg + "?sslmode=allow"}, "DATABASE_URL has sslmode=allow"},
		{"no sslmode", []string{pg}, "DATABASE_URL sets no sslmode, so it is prefer"},
		{"key=value, no sslmode", []string{"DATABASE_URL=host=db.example user=onceflow dbname=onceflow"}, "DATABASE_URL sets no sslmode"},
		{"key=value, sslmode=disable", []string{"DATABASE_URL=host=db.example sslmode='disable'"}, "DATABASE_URL has sslmode=disable"},
		{"sslmode=verify-full", []string{pg + "?sslmode=verify-full"}, ""},
		{"sslmode=require", []string{pg + "?sslmode=require"}, ""},
		{"key=value, verify-full", []string{"DATABASE_URL=host=db.example sslmode=verify-full"}, ""},
		{"database on loopback", []string{"DATABASE_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable"}, ""},
		{"database on a socket", []string{"DATABASE_URL=host=/var/run/postgresql dbname=onceflow"}, ""},
		{"database on a sidecar", []string{"DATABASE_URL=postgres://onceflow@localhost:5432/onceflow?sslmode=disable"}, ""},
		{"one remote host of two", []string{"DATABASE_URL=postgres://u@127.0.0.1:5432,db.example:5432/x?sslmode=disable"}, "DATABASE_URL has sslmode=disable"},

		{"a broker unsigned", []string{"TRANSPORT=nats", "NATS_URL=nats://127.0.0.1:4222"}, "MESSAGE_SIGNING_SECRETS is unset with TRANSPORT=nats"},
		{"a broker signed", []string{"TRANSPORT=nats", "NATS_URL=nats://127.0.0.1:4222", signed}, ""},
		{"in process, unsigned", nil, ""},

		{"admin on the public port", []string{"API_KEYS=9f3c1a7e5b2d8c4f6a0e:a", "ADMIN_API_KEY=4e7b1d9a3c6f0e2b8d5a7c1f3e9b6d20"}, "INTERNAL_ADDR is unset: the key admin (/admin/)"},
		{"metrics on the public port", []string{"API_KEYS=9f3c1a7e5b2d8c4f6a0e:a"}, "INTERNAL_ADDR is unset: /metrics, /healthz and /readyz are served without a key on HTTP_ADDR=:8080"},
		{"operators' admin on the public port", []string{"API_KEYS=9f3c1a7e5b2d8c4f6a0e:a", "ADMIN_API_KEYS=4e7b1d9a3c6f0e2b8d5a7c1f3e9b6d20:alice"}, "INTERNAL_ADDR is unset: the key admin (/admin/)"},
		{"admin on the internal port", []string{"API_KEYS=9f3c1a7e5b2d8c4f6a0e:a", "ADMIN_API_KEY=4e7b1d9a3c6f0e2b8d5a7c1f3e9b6d20", "INTERNAL_ADDR=:9090"}, ""},
		{"the public port on loopback", []string{"API_KEYS=9f3c1a7e5b2d8c4f6a0e:a", "ADMIN_API_KEY=4e7b1d9a3c6f0e2b8d5a7c1f3e9b6d20", "HTTP_ADDR=127.0.0.1:8080"}, ""},
		{"an anonymous API (make run)", []string{"ALLOW_ANONYMOUS=true"}, ""},

		{"redis without password or TLS", []string{"STORE=redis", "REDIS_URL=redis://redis:6379/0"}, "REDIS_URL: no credentials and no TLS"},
		{"redis without TLS", []string{"STORE=redis", "REDIS_URL=redis://:pw@redis:6379/0"}, "REDIS_URL: no TLS"},
		{"redis without password", []string{"STORE=redis", "REDIS_URL=rediss://redis:6379/0"}, "REDIS_URL: no credentials"},
		{"redis with REDIS_PASSWORD", []string{"STORE=redis", "REDIS_URL=rediss://redis:6379/0", "REDIS_USERNAME=onceflow", "REDIS_PASSWORD=pw"}, ""},
		{"redis with both in its URL", []string{"STORE=redis", "REDIS_URL=rediss://onceflow:pw@redis:6379/0"}, ""},
		{"redis cluster in clear", []string{"STORE=redis", "REDIS_ADDRS=r1:6379,r2:6379"}, "REDIS_ADDRS: no credentials and no TLS"},
		{"redis cluster closed", []string{"STORE=redis", "REDIS_ADDRS=r1:6379,r2:6379", "REDIS_TLS=true", "REDIS_PASSWORD=pw"}, ""},
		{"redis on loopback", []string{"STORE=redis", "REDIS_URL=redis://127.0.0.1:6379/0"}, ""},
		{"redis unused", []string{"REDIS_URL=redis://redis:6379/0"}, ""},
		{"redis streams in clear", []string{"TRANSPORT=redisstream", "REDIS_STREAM_URL=redis://redis:6379/1", signed}, "REDIS_STREAM_URL: no credentials and no TLS"},
		{"redis streams closed", []string{"TRANSPORT=redisstream", "REDIS_STREAM_URL=rediss://onceflow:pw@redis:6379/1", signed}, ""},
		{"redis streams on the store's redis", []string{"TRANSPORT=redisstream", "REDIS_URL=redis://redis:6379/0", signed}, "REDIS_URL: no credentials and no TLS"},

		{"rabbitmq as guest", []string{"TRANSPORT=amqp", "AMQP_URL=amqp://guest:guest@rabbitmq:5672/", signed}, "AMQP_URL: no credentials and no TLS"},
		{"rabbitmq without a user", []string{"TRANSPORT=amqp", "AMQP_URL=amqps://rabbitmq:5671/", signed}, "AMQP_URL: no credentials"},
		{"rabbitmq without TLS", []string{"TRANSPORT=amqp", "AMQP_URL=amqp://onceflow:pw@rabbitmq:5672/", signed}, "AMQP_URL: no TLS"},
		{"rabbitmq closed", []string{"TRANSPORT=amqp", "AMQP_URL=amqps://onceflow:pw@rabbitmq:5671/onceflow", signed}, ""},

		{"nats in clear", []string{"TRANSPORT=nats", "NATS_URL=nats://nats:4222", signed}, "NATS_URL: no credentials and no TLS"},
		{"nats, one server in clear", []string{"TRANSPORT=nats", "NATS_URL=tls://u:pw@n1:4222,nats://u:pw@n2:4222", signed}, "NATS_URL: no TLS"},
		{"nats with a token", []string{"TRANSPORT=nats", "NATS_URL=tls://t0ken@nats:4222", signed}, ""},
		{"nats closed", []string{"TRANSPORT=nats", "NATS_URL=tls://onceflow:pw@nats:4222", signed}, ""},

		{"kafka in clear", []string{"TRANSPORT=kafka", "KAFKA_BROKERS=k1:9092,k2:9092", signed}, "KAFKA_BROKERS: no credentials and no TLS"},
		{"kafka without TLS", []string{"TRANSPORT=kafka", "KAFKA_BROKERS=k1:9092", "KAFKA_SASL_MECHANISM=SCRAM-SHA-512", "KAFKA_USERNAME=u", "KAFKA_PASSWORD=pw", signed}, "KAFKA_BROKERS: no TLS"},
		{"kafka without SASL", []string{"TRANSPORT=kafka", "KAFKA_BROKERS=k1:9093", "KAFKA_TLS=true", signed}, "KAFKA_BROKERS: no credentials"},
		// PLAIN without TLS: the transport's own warning, where it connects.
		{"kafka PLAIN in clear", []string{"TRANSPORT=kafka", "KAFKA_BROKERS=k1:9092", "KAFKA_SASL_MECHANISM=PLAIN", "KAFKA_USERNAME=u", "KAFKA_PASSWORD=pw", signed}, ""},
		{"kafka closed", []string{"TRANSPORT=kafka", "KAFKA_BROKERS=k1:9093", "KAFKA_SASL_MECHANISM=SCRAM-SHA-512", "KAFKA_USERNAME=u", "KAFKA_PASSWORD=pw", "KAFKA_TLS=true", signed}, ""},
		{"kafka on loopback", []string{"TRANSPORT=kafka", "KAFKA_BROKERS=127.0.0.1:9092", signed}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !builtInEnv(tc.environ) {
				t.Skip("the broker is not in this build")
			}
			ws := warningsOf(t, tc.environ...)
			switch {
			case tc.want == "" && len(ws) > 0:
				t.Errorf("warnings %q, want none", ws)
			case tc.want != "" && (len(ws) != 1 || !strings.HasPrefix(ws[0], tc.want)):
				t.Errorf("warnings %q, want one beginning %q", ws, tc.want)
			}
			for _, w := range ws {
				if strings.Contains(w, "pw") || strings.Contains(w, "t0ken") || strings.Contains(w, "example") || strings.Contains(w, "\n") {
					t.Errorf("warning %q shows a credential or a host, or spans lines", w)
				}
			}
		})
	}
}

// The settings deploy/amqp.env once shipped (RabbitMQ as guest, Redis and
// PostgreSQL in clear, PostgreSQL's superuser, no signing secret) warn of
// every one of them; the file as it ships, its placeholders filled,
// warns of nothing, and with its signing secret left empty warns of that
// alone.
func TestConfigWarningsOfDeployFiles(t *testing.T) {
	old := []string{
		"TRANSPORT=amqp", "AMQP_URL=amqp://guest:guest@rabbitmq:5672/",
		"STORE=redis", "REDIS_URL=redis://redis:6379/0", "REDIS_REQUIRE_DURABLE=true",
		"DATABASE_URL=postgres://postgres@postgres:5432/test?sslmode=disable",
	}
	want := []string{"DATABASE_URL has sslmode=disable", "MESSAGE_SIGNING_SECRETS is unset with TRANSPORT=amqp",
		"REDIS_URL: no credentials and no TLS", "AMQP_URL: no credentials and no TLS"}
	got := warningsOf(t, old...)
	if len(got) != len(want) {
		t.Fatalf("warnings %q, want %d: %q", got, len(want), want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("warning %d: %q, want it to begin %q", i+1, got[i], want[i])
		}
	}

	files, err := filepath.Glob(filepath.Join("..", "deploy", "*.env"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no deploy/*.env (%v)", err)
	}
	for _, f := range files {
		environ := envFileLines(t, f)
		if !builtInEnv(environ) {
			continue // a broker this build does not have
		}
		if got := warningsOf(t, append(environ, signed)...); len(got) > 0 {
			t.Errorf("%s with its secrets filled: warnings %q, want none", f, got)
		}
		if got := warningsOf(t, environ...); len(got) != 1 || !strings.HasPrefix(got[0], "MESSAGE_SIGNING_SECRETS is unset") {
			t.Errorf("%s as it ships: warnings %q, want the unset signing secret alone", f, got)
		}
	}
}

// envFileLines reads the KEY=VALUE lines of an env file.
func envFileLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var environ []string
	for line := range strings.Lines(string(b)) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			environ = append(environ, line)
		}
	}
	return environ
}

// Start-up logs each warning, at level WARN, right after the effective
// configuration and before anything can stop it.
func TestStartupLogsConfigWarnings(t *testing.T) {
	environ := []string{"HTTP_ADDR=127.0.0.1:0", "DATABASE_URL=postgres://onceflow:pw@db.example:5432/onceflow?sslmode=disable"}
	cfg, err := LoadConfig(environ)
	if err != nil {
		t.Fatal(err)
	}
	var logs testenv.Buffer
	// Without API_KEYS, New stops at the access check, before it opens
	// the database.
	_, err = New(t.Context(), cfg, testdomain.Domain(), slog.New(slog.NewTextHandler(&logs, nil)))
	if !errors.Is(err, errNoAPIKeys) {
		t.Fatalf("New: %v, want the refusal without API_KEYS", err)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "msg=starting") ||
		!strings.Contains(lines[1], "level=WARN") || !strings.Contains(lines[1], "DATABASE_URL has sslmode=disable") {
		t.Errorf("logged:\n%s\nwant the starting line, then the warning", logs.String())
	}
}
