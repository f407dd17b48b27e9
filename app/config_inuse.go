package app

import (
	"strings"

	"github.com/onceflow/onceflow/transport"
)

// backendSettings maps the prefix of a variable's name to the backend its
// setting configures, the longest prefix first. A variable no prefix
// matches is the service's own, always in use.
var backendSettings = []struct{ prefix, backend string }{
	{"REDIS_STREAM_", transport.RedisStream},
	{"REDIS_", "redis"},
	{"KAFKA_", transport.Kafka},
	{"AMQP_", transport.AMQP},
	{"NATS_", transport.NATS},
	{"SQL_", transport.SQL},
	{"DATABASE_", "postgres"},
	{"PG_", "postgres"},
	{"MIGRATE_ON_START", "postgres"},
	{"OTEL_EXPORTER_OTLP_ENDPOINT", "otlp-base"},
}

// backendOf is the backend the variable name configures, or "".
func backendOf(name string) string {
	for _, b := range backendSettings {
		if strings.HasPrefix(name, b.prefix) {
			return b.backend
		}
	}
	return ""
}

// opens reports whether the service opens backend, as c configures it:
// the transport TRANSPORT names; Redis for STORE=redis or a redisstream
// transport on REDIS_URL; PostgreSQL whenever DATABASE_URL is set (the
// ledger lives there); OTEL_EXPORTER_OTLP_ENDPOINT unless
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT overrides it.
func (c Config) opens(backend string) bool {
	switch backend {
	case "":
		return true
	case "redis":
		return c.Store == "redis" || c.Transport == transport.RedisStream && c.RedisStreamURL == ""
	case "postgres":
		return c.DatabaseURL != ""
	case "otlp-base":
		return c.OTLPTracesEndpoint == ""
	}
	return c.Transport == backend
}

// logged reports whether the effective configuration's log line shows s:
// only the settings of the backends the service opens, so that the line
// names no URL, user or host the service does not use.
func (c Config) logged(s setting) bool { return c.opens(backendOf(s.Name)) }
