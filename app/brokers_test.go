package app

import (
	"slices"
	"testing"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
	"github.com/onceflow/onceflow/transport"
)

// builtIn reports whether this build has the transport kind
// ([transport.Kinds]): a test's case of a broker a fork removed (its
// folder and its entry in package transport) does not run.
func builtIn(kind string) bool { return slices.Contains(transport.Kinds, kind) }

// builtInEnv reports whether a case of environ runs in this build: it
// sets no TRANSPORT, or one that is [builtIn].
func builtInEnv(environ []string) bool {
	kind := testenv.Setting(environ, "TRANSPORT")
	return kind == "" || builtIn(kind)
}

// serviceEnv is [brokerenv.ServiceEnv] for a service of the test domain on
// the broker kind.
func serviceEnv(t testing.TB, kind string) []string {
	t.Helper()
	return brokerenv.ServiceEnv(t, kind, amqpDeclared)
}

// amqpDeclared is what a service of the test domain declares on RabbitMQ.
func amqpDeclared(prefix, service string) (exchanges, queues []string) {
	return Config{TopicPrefix: prefix, ServiceName: service}.AMQPDeclared(testdomain.Routes())
}
