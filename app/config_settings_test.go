package app

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/transport"
)

// TestSettingsDeclared: every field of Config declares a setting in full
// (a variable of its own, a doc comment, an allowed default), is a row of
// the generated page and a key of the log line, and a setting whose name
// says it holds a secret is tagged as one.
func TestSettingsDeclared(t *testing.T) {
	docs := fieldDocs(t)
	page := string(configurationPage(t))
	logged := map[string]any{} // what the log line shows with any backend in use
	for _, cfg := range everyBackend() {
		maps.Copy(logged, loggedConfig(t, cfg))
	}
	secretShaped := regexp.MustCompile(`_URL$|_ENDPOINT$|_KEYS?$|TOKEN|PASSWORD|SECRET`)
	envShaped := regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

	list := settings()
	if n := reflect.TypeFor[Config]().NumField(); len(list) != n || len(docs) != n {
		t.Fatalf("%d settings and %d documented fields for %d fields of Config", len(list), len(docs), n)
	}
	seen := map[string]string{}
	for _, s := range list {
		if other, dup := seen[s.Name]; dup {
			t.Errorf("%s and %s both read %s", other, s.Field, s.Name)
		}
		seen[s.Name] = s.Field
		if !envShaped.MatchString(s.Name) {
			t.Errorf("%s reads %q, not an environment variable's name", s.Field, s.Name)
		}
		if doc := docs[s.Field]; !strings.HasPrefix(doc, s.Field+" ") && !strings.HasPrefix(doc, s.Field+",") {
			t.Errorf("%s (%s) has no doc comment that begins with its name: %q", s.Field, s.Name, doc)
		}
		if err := s.checkAllowed(s.Default); err != nil {
			t.Errorf("%s's default: %v", s.Field, err)
		}
		if slices.Contains(s.Allowed, "") {
			t.Errorf("%s allows an empty value: %q", s.Field, s.Allowed)
		}
		if s.Secret == "" && secretShaped.MatchString(s.Name) {
			t.Errorf("%s looks like a secret: tag %s with secret:\"url\", \"apikeys\" or \"true\"", s.Name, s.Field)
		}
		if !strings.Contains(page, "\n| `"+s.Name+"` |") {
			t.Errorf("%s has no row in the generated docs/configuration.md", s.Name)
		}
		if _, ok := logged[s.logAttr(s.value(reflect.ValueOf(Config{}))).Key]; !ok {
			t.Errorf("%s is not in the logged configuration: %v", s.Name, logged)
		}
	}
	if len(logged) != len(list) {
		t.Errorf("the logged configuration has %d keys for %d settings: %v", len(logged), len(list), logged)
	}
	if s, _ := settingNamed("TRANSPORT"); !slices.Equal(s.Allowed, transport.Kinds) {
		t.Errorf("TRANSPORT allows %q, the transports are %q", s.Allowed, transport.Kinds)
	}
}

// everyBackend are configurations that, together, open every backend a
// setting belongs to (backendOf): the settings of a broker the build does
// not have are still fields of Config, logged when it is configured.
func everyBackend() []Config {
	var list []Config
	for _, s := range settings() {
		list = append(list, opening(backendOf(s.Name)))
	}
	return list
}

// opening is a configuration that opens backend.
func opening(backend string) Config {
	switch backend {
	case "redis":
		return Config{Store: "redis"}
	case "postgres":
		return Config{DatabaseURL: "postgres://db/app"}
	}
	return Config{Transport: backend}
}

// loggedConfig is the config group of a JSON log line of cfg.
func loggedConfig(t *testing.T, cfg Config) map[string]any {
	t.Helper()
	var b strings.Builder
	slog.New(slog.NewJSONHandler(&b, nil)).Info("starting", "config", cfg)
	var line struct{ Config map[string]any }
	if err := json.Unmarshal([]byte(b.String()), &line); err != nil {
		t.Fatalf("%v: %s", err, b.String())
	}
	return line.Config
}

// TestConfigLogMasksEverySecret sets every secret setting to a value full
// of secrets, in every place its kind can hold one, and requires that none
// shows in the log line while where the URLs point does.
func TestConfigLogMasksEverySecret(t *testing.T) {
	const leak = "LEAK"
	values := map[string]string{
		secretURL:     "http://user-ok:pw-LEAK@host-ok:1/path-ok?password=LEAK&token=LEAK&api_key=LEAK&apikey=LEAK&secret=LEAK&access_token=LEAK&sslpassword=LEAK#LEAK",
		secretAPIKeys: "key-LEAK:client-ok,pass:LEAK:client-b-ok",
		secretWhole:   "LEAK",
	}
	for _, s := range settings() {
		if s.Secret == "" {
			continue
		}
		cfg := opening(backendOf(s.Name))
		s.value(reflect.ValueOf(&cfg)).SetString(values[s.Secret])
		var b strings.Builder
		slog.New(slog.NewTextHandler(&b, nil)).Info("starting", "config", cfg)
		out := b.String()
		if strings.Contains(out, leak) {
			t.Errorf("%s (secret:%q) logged in clear: %s", s.Name, s.Secret, out)
		}
		if s.Secret != secretWhole && !strings.Contains(out, "-ok") {
			t.Errorf("%s (secret:%q) logged without its non-secret parts: %s", s.Name, s.Secret, out)
		}
		if s.Secret == secretWhole && !strings.Contains(out, strings.ToLower(s.Name)+"_set=true") {
			t.Errorf("%s (secret:%q) not logged as set: %s", s.Name, s.Secret, out)
		}
	}
	// a lone user name (a token) and a password in the query
	for _, raw := range []string{"nats://LEAK@nats:4222", "postgres://app@db/app?password=LEAK", "http://otel:4318?api_key=LEAK"} {
		cfg := Config{Transport: transport.NATS, NATSURL: raw, DatabaseURL: raw, OTLPEndpoint: raw}
		if out := fmt.Sprint(loggedConfig(t, cfg)); strings.Contains(out, leak) {
			t.Errorf("%s logged in clear: %s", raw, out)
		}
	}
}

// TestCheckSetting: the check of deploy files refuses an unknown variable,
// a value its type does not parse and one its allowed tag does not list.
func TestCheckSetting(t *testing.T) {
	for _, tc := range []struct{ name, value, want string }{
		{"TRANSPORT", "kafka", ""},
		{"REDIS_REQUIRE_DURABLE", "true", ""},
		{"DEDUP_TTL", "1h", ""},
		{"TRANSPROT", "kafka", "TRANSPROT is not a setting"},
		{"STORE", "mongo", `STORE="mongo" is not allowed: use one of memory, redis, postgres`},
		{"DEDUP_TTL", "a day", "DEDUP_TTL: unable to parse duration"},
		{"MIGRATE_ON_START", "yes please", "MIGRATE_ON_START: strconv.ParseBool"},
	} {
		err := CheckSetting(tc.name, tc.value)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckSetting(%s, %q) = %v, want %q", tc.name, tc.value, err, tc.want)
		}
	}
}

// TestConfigLogListsBackendsInUse: the effective configuration names the
// backends the service opens and no other, however many are set: an
// operator reading it sees what the service connects to, and a URL set for
// another deployment's backend is neither logged nor mistaken for one in
// use.
func TestConfigLogListsBackendsInUse(t *testing.T) {
	all := []string{
		"DATABASE_URL=postgres://app@db/app", "REDIS_URL=redis://cache:6379/0", "REDIS_STREAM_URL=redis://streams:6379/1",
		"KAFKA_BROKERS=kafka:9092", "AMQP_URL=amqp://mq:5672/", "NATS_URL=nats://nats:4222",
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://otel:4318",
	}
	for _, tc := range []struct {
		name    string
		environ []string
		want    []string // logged, besides the service's own settings
	}{
		{"kafka, memory", []string{"TRANSPORT=kafka", "STORE=memory", "DATABASE_URL="},
			[]string{"kafka_brokers", "kafka_partitions", "otel_exporter_otlp_endpoint"}},
		{"amqp, redis", []string{"TRANSPORT=amqp", "STORE=redis", "DATABASE_URL="},
			[]string{"amqp_url", "amqp_connect_timeout", "redis_url", "redis_addrs", "otel_exporter_otlp_endpoint"}},
		{"the ledger opens PostgreSQL", []string{"TRANSPORT=nats", "STORE=memory"},
			[]string{"nats_url", "nats_max_age", "database_url", "database_max_conns", "migrate_on_start", "pg_records_layout", "otel_exporter_otlp_endpoint"}},
		{"sql, postgres", []string{"TRANSPORT=sql", "STORE=postgres"},
			[]string{"sql_poll_interval", "database_url", "pg_partition_width", "otel_exporter_otlp_endpoint"}},
		{"redisstream on its own URL", []string{"TRANSPORT=redisstream", "STORE=memory", "DATABASE_URL="},
			[]string{"redis_stream_url", "redis_stream_maxlen", "otel_exporter_otlp_endpoint"}},
		{"redisstream on REDIS_URL", []string{"TRANSPORT=redisstream", "STORE=memory", "DATABASE_URL=", "REDIS_STREAM_URL="},
			[]string{"redis_stream_url", "redis_url", "otel_exporter_otlp_endpoint"}},
		{"the traces endpoint overrides the base", []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://otel:4318/v1/traces", "DATABASE_URL="},
			[]string{"otel_exporter_otlp_traces_endpoint"}},
	} {
		if !builtInEnv(tc.environ) {
			continue // a case of a broker the build does not have
		}
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := LoadConfig(append(slices.Clone(all), tc.environ...))
			if err != nil {
				t.Fatal(err)
			}
			logged := loggedConfig(t, cfg)
			for _, key := range append(tc.want, "transport", "store", "http_addr", "dedup_ttl") {
				if _, ok := logged[key]; !ok {
					t.Errorf("%s not logged: %v", key, logged)
				}
			}
			for key := range logged {
				s, _ := settingNamed(strings.ToUpper(strings.TrimSuffix(key, "_set")))
				if b := backendOf(s.Name); b != "" && !cfg.opens(b) {
					t.Errorf("%s logged, but the service does not open %s: %v", key, b, logged)
				}
			}
			for _, name := range []string{"amqp_url", "kafka_brokers", "nats_url", "redis_url", "redis_stream_url", "database_url", "otel_exporter_otlp_endpoint"} {
				if _, ok := logged[name]; ok && !slices.Contains(tc.want, name) {
					t.Errorf("%s logged: %v", name, logged)
				}
			}
		})
	}
}
