package brokerenv

import (
	"strings"
	"testing"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/transport/broker"
)

// Declared lists the durable exchanges and queues that a service with
// topic prefix and service name declares on RabbitMQ: app's
// Config.AMQPDeclared of the service's routes.
type Declared func(prefix, service string) (exchanges, queues []string)

// ServiceEnv returns the settings of a service under test on the broker
// kind (one of transport.Kinds, which this package cannot import: the
// broker packages' own tests import this one): TRANSPORT, the broker's URL
// settings, and a TOPIC_PREFIX and SERVICE_NAME of the test's own
// ([testenv.Names]), so that tests sharing a broker share nothing on it.
// Every service a test starts on them shares the broker's namespace, as
// replicas do. What such services leave on a shared broker is deleted when
// t ends: NATS streams, Redis streams and their groups, and on RabbitMQ the
// exchanges and queues declared lists. The sql transport gets a
// PostgreSQL schema of the test's own as DATABASE_URL, and a 10ms poll.
//
// A broker that cannot be reached skips t, or fails it under
// REQUIRE_SERVICES=1; a kind it does not know fails t.
func ServiceEnv(t testing.TB, kind string, declared Declared) []string {
	t.Helper()
	prefix, service := testenv.Names()
	env := []string{"TRANSPORT=" + kind, "TOPIC_PREFIX=" + prefix, "SERVICE_NAME=" + service}
	switch kind {
	case "gochannel":
		return env
	case "kafka":
		return append(env, "KAFKA_BROKERS="+strings.Join(Kafka(t), ","))
	case "amqp":
		url := AMQP(t)
		if declared == nil {
			t.Fatal("brokerenv.ServiceEnv: amqp needs what the service declares, to delete it")
		}
		exchanges, queues := declared(prefix, service)
		DeleteAMQPOnCleanup(t, url, exchanges, queues)
		return append(env, "AMQP_URL="+url)
	case "sql":
		return append(env, "DATABASE_URL="+testenv.PostgresSchema(t), "SQL_POLL_INTERVAL=10ms")
	case "nats":
		url := NATS(t)
		DeleteNATSStreamsOnCleanup(t, url, broker.NATSStream(prefix))
		return append(env, "NATS_URL="+url)
	case "redisstream":
		testenv.DeleteRedisKeysOnCleanup(t, testenv.Redis(t), prefix)
		return append(env, "REDIS_STREAM_URL=redis://"+testenv.RedisAddr()+"/0")
	}
	t.Fatalf("brokerenv.ServiceEnv: no settings for the broker %q", kind)
	return nil
}
