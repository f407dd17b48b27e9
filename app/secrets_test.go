package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
	"github.com/onceflow/onceflow/transport"
)

// secrets are the secret values one test puts in the service's settings,
// each of its own, so that a leak names where it came from.
type secrets map[string]string

func newSecrets(names ...string) secrets {
	s := secrets{}
	for _, n := range names {
		s[n] = "sEcReT-" + n + "-" + strings.ToLower(testenv.NewID()[:8])
	}
	return s
}

// check fails t for every secret that what (a log, a scrape...) contains.
func (s secrets) check(t *testing.T, what, text string) {
	t.Helper()
	for name, v := range s {
		if strings.Contains(text, v) {
			t.Errorf("the %s shows the %s secret %q", what, name, v)
		}
	}
}

// The whole service, started with a secret in every URL and credential
// setting it uses (and in those it does not), a request run through it to
// the end: no log line (at debug), no /metrics output, no span (its name,
// attributes, events, status), no probe's answer and no error from Run
// holds any of them. Each case is on a broker of its own, of those the
// build has.
func TestNoSecretLeaves(t *testing.T) {
	for name, c := range map[string]struct {
		kind  string
		setup func(t *testing.T, s secrets) []string
	}{
		"postgres with a password, redis streams with requirepass": {transport.RedisStream, func(t *testing.T, s secrets) []string {
			redis := testenv.RedisSecured(t, s["redis"], nil, false)
			prefix, service := testenv.Names()
			return []string{"STORE=postgres", "DATABASE_URL=" + postgresRole(t, s["postgres"]),
				"TRANSPORT=redisstream", "REDIS_URL=" + redis.URL(), "REDIS_PASSWORD=" + s["redis"],
				"TOPIC_PREFIX=" + prefix, "SERVICE_NAME=" + service}
		}},
		"kafka with SCRAM over TLS, redis over TLS": {transport.Kafka, func(t *testing.T, s secrets) []string {
			certs := testenv.TLS(t)
			brokers := brokerenv.KafkaSecured(t, "SCRAM-SHA-512", "svc", s["kafka"], certs.Server)
			redis := testenv.RedisSecured(t, s["redis"], &certs, false)
			prefix, service := testenv.Names()
			return []string{"TRANSPORT=kafka", "KAFKA_BROKERS=" + strings.Join(brokers, ","),
				"KAFKA_SASL_MECHANISM=SCRAM-SHA-512", "KAFKA_USERNAME=svc", "KAFKA_PASSWORD=" + s["kafka"],
				"KAFKA_TLS=true", "KAFKA_TLS_CA_FILE=" + certs.CAFile,
				"STORE=redis", "REDIS_URL=rediss://:" + s["redis"] + "@" + redis.Addr + "/0", "REDIS_TLS_CA_FILE=" + certs.CAFile,
				"TOPIC_PREFIX=" + prefix, "SERVICE_NAME=" + service}
		}},
		"nats with a token": {transport.NATS, func(t *testing.T, s secrets) []string {
			nats := brokerenv.NATSServerWithToken(t, s["nats"])
			prefix, service := testenv.Names()
			return []string{"TRANSPORT=nats", "NATS_URL=" + nats.URL(), "TOPIC_PREFIX=" + prefix, "SERVICE_NAME=" + service}
		}},
		"amqp with a user of its own": {transport.AMQP, func(t *testing.T, s secrets) []string {
			env := serviceEnv(t, transport.AMQP)
			return append(env, "AMQP_URL="+rabbitMQUser(t, testenv.Setting(env, "AMQP_URL"), s["amqp"]))
		}},
	} {
		if !builtIn(c.kind) {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newSecrets("postgres", "redis", "kafka", "nats", "amqp", "otlp", "admin", "signing", "unused")
			s["signing"] += "-of-32-characters-at-least"
			environ := append(c.setup(t, s),
				"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318/?api_key="+s["otlp"],
				"ADMIN_API_KEY="+s["admin"], "MESSAGE_SIGNING_SECRETS="+s["signing"], "LOG_LEVEL=debug",
			)
			// URLs of backends the service does not open, with secrets too.
			for _, unused := range []string{
				"AMQP_URL=amqp://u:" + s["unused"] + "@127.0.0.1:1/", "NATS_URL=nats://" + s["unused"] + "@127.0.0.1:1",
				"REDIS_STREAM_URL=redis://:" + s["unused"] + "@127.0.0.1:1/0",
			} {
				v, _, _ := strings.Cut(unused, "=")
				if set := strings.Join(environ, " "); !strings.Contains(set, v+"=") && !strings.Contains(set, "TRANSPORT=redisstream") {
					environ = append(environ, unused)
				}
			}
			logs := &testenv.Buffer{}
			spans := tracetest.NewInMemoryExporter()
			a := startAppLogging(t, seams{spans: spans}, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), environ...)

			flowtest.PostOK(t, a, "req-secret-1")
			waitFor(t, "the request noticed", func() bool { return flowtest.Tally(t, a).Notices.Rows == 1 })
			if code := a.Post(t, "/admin/keys/x", "", "Authorization", "Bearer wrong"); code == 0 {
				t.Error("admin: no answer")
			}
			s.check(t, "/metrics output", string(a.scrape(t).text))
			for _, path := range []string{"/readyz", "/healthz"} {
				s.check(t, path+" answer", getBody(t, a.base+path))
			}
			// Before stop: the provider's shutdown empties the exporter.
			s.check(t, "spans", spanText(spans.GetSpans()))
			if len(spans.GetSpans()) == 0 {
				t.Error("no spans to check")
			}
			if err := a.stop(); err != nil {
				s.check(t, "error of Run", err.Error())
			}
			s.check(t, "log", logs.String())
			if !strings.Contains(logs.String(), `"msg":"starting"`) {
				t.Errorf("no starting line in the log: %s", logs.String())
			}
		})
	}
}

// spanText is every span's name, attributes, events, links and status
// as text.
func spanText(spans tracetest.SpanStubs) string {
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "%s %v %v %v %v %v\n", s.Name, s.Attributes, s.Events, s.Links, s.Status, s.Resource.Attributes())
	}
	return b.String()
}

var _ sdktrace.SpanExporter = (*tracetest.InMemoryExporter)(nil)

// getBody is the body of GET url.
func getBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Errorf("GET %s: %v", url, err)
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// postgresRole creates a login role with password, allowed into a fresh
// schema of the test database, and returns its URL (password included);
// the role and what it owns are dropped when t ends.
func postgresRole(t *testing.T, password string) string {
	t.Helper()
	schemaURL := testenv.PostgresSchema(t)
	u, err := url.Parse(schemaURL)
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("search_path")
	role := "r_" + strings.ToLower(strings.ReplaceAll(testenv.NewID()[:12], "-", ""))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, testenv.PostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, stmt := range []string{
		fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD %s", pgx.Identifier{role}.Sanitize(), quoteLiteral(password)),
		fmt.Sprintf("GRANT USAGE, CREATE ON SCHEMA %s TO %s", pgx.Identifier{schema}.Sanitize(), pgx.Identifier{role}.Sanitize()),
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", strings.ReplaceAll(stmt, password, "xxxxx"), err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, testenv.PostgresURL())
		if err != nil {
			t.Logf("dropping role %s: %v", role, err)
			return
		}
		defer conn.Close(ctx)
		for _, stmt := range []string{"DROP OWNED BY " + pgx.Identifier{role}.Sanitize(), "DROP ROLE " + pgx.Identifier{role}.Sanitize()} {
			if _, err := conn.Exec(ctx, stmt); err != nil {
				t.Logf("%s: %v", stmt, err)
			}
		}
	})
	u.User = url.UserPassword(role, password)
	return u.String()
}

// quoteLiteral quotes s as an SQL string literal.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// rabbitMQUser adds a RabbitMQ user with password and every permission on
// the default virtual host, deleted when t ends, and returns amqpURL
// logging in as it. Without rabbitmqctl (or its rights) t is skipped.
func rabbitMQUser(t *testing.T, amqpURL, password string) string {
	t.Helper()
	user := "onceflow-test-" + testenv.NewID()[:8]
	ctl := func(args ...string) error {
		out, err := exec.Command("rabbitmqctl", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("rabbitmqctl %s: %v: %s", args[0], err, strings.ReplaceAll(string(out), password, "xxxxx"))
		}
		return nil
	}
	if _, err := exec.LookPath("rabbitmqctl"); err != nil {
		t.Skip("no rabbitmqctl to add a RabbitMQ user with")
	}
	if err := ctl("add_user", user, password); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() {
		if err := ctl("delete_user", user); err != nil {
			t.Log(err)
		}
	})
	if err := ctl("set_permissions", "-p", "/", user, ".*", ".*", ".*"); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(amqpURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(user, password)
	return u.String()
}

// A start-up that fails, on a backend that does not answer or a URL that
// does not parse, says which setting failed and never shows its secret;
// the cases of brokers are those of the brokers the build has.
func TestStartupFailureHidesSecrets(t *testing.T) {
	const pw = "sEcReT-pa55"
	for _, tc := range []struct {
		name    string
		environ []string
		want    string
	}{
		{"postgres unreachable", []string{"DATABASE_URL=postgres://app:" + pw + "@127.0.0.1:1/app?sslmode=disable"}, "DATABASE_URL"},
		{"postgres password in the query", []string{"DATABASE_URL=postgres://app@127.0.0.1:1/app?sslmode=disable&password=" + pw}, "DATABASE_URL"},
		{"postgres URL that does not parse", []string{"DATABASE_URL=postgres://app:" + pw + "@127.0.0.1:notaport/app"}, "DATABASE_URL"},
		{"postgres keyword/value", []string{"DATABASE_URL=host=127.0.0.1 port=1 user=app password=" + pw + " sslmode=disable"}, "DATABASE_URL"},
		{"redis unreachable", []string{"STORE=redis", "REDIS_URL=redis://:" + pw + "@127.0.0.1:1/0"}, "REDIS_URL"},
		{"redis URL that does not parse", []string{"STORE=redis", "REDIS_URL=redis://:" + pw + "@127.0.0.1:x/0"}, "REDIS_URL"},
		{"redis cluster unreachable", []string{"STORE=redis", "REDIS_ADDRS=127.0.0.1:1", "REDIS_PASSWORD=" + pw}, "REDIS_ADDRS"},
		{"redis TLS CA file missing", []string{"STORE=redis", "REDIS_URL=rediss://:" + pw + "@127.0.0.1:1/0", "REDIS_TLS_CA_FILE=/nonexistent/ca.pem"}, "REDIS_TLS_CA_FILE"},
		{"amqp unreachable", []string{"TRANSPORT=amqp", "AMQP_URL=amqp://app:" + pw + "@127.0.0.1:1/", "AMQP_CONNECT_TIMEOUT=500ms"}, "AMQP_URL"},
		{"amqp URL that does not parse", []string{"TRANSPORT=amqp", "AMQP_URL=amqp://app:" + pw + "@127.0.0.1:x/"}, "AMQP_URL"},
		{"nats unreachable", []string{"TRANSPORT=nats", "NATS_URL=nats://" + pw + "@127.0.0.1:1"}, "NATS_URL"},
		{"redisstream unreachable", []string{"TRANSPORT=redisstream", "REDIS_STREAM_URL=redis://:" + pw + "@127.0.0.1:1/0"}, "REDIS_STREAM_URL"},
		{"kafka unreachable", []string{"TRANSPORT=kafka", "KAFKA_BROKERS=127.0.0.1:1", "KAFKA_SASL_MECHANISM=SCRAM-SHA-256",
			"KAFKA_USERNAME=app", "KAFKA_PASSWORD=" + pw}, "KAFKA_BROKERS"},
		{"otlp endpoint that does not parse", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://[::1:4318/?api_key=" + pw}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
	} {
		if !builtInEnv(tc.environ) {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := LoadConfig(append([]string{"HTTP_ADDR=127.0.0.1:0"}, tc.environ...))
			if err != nil {
				if msg := err.Error(); strings.Contains(msg, pw) || !strings.Contains(msg, tc.want) {
					t.Errorf("LoadConfig: %q, want one naming %s without the password", msg, tc.want)
				}
				return
			}
			startupFails(t, tc.environ, tc.want, pw, 15*time.Second)
		})
	}
}
