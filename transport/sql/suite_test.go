package sql

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/tests"

	"github.com/onceflow/onceflow/exactlyonce"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/transport/broker"
	"github.com/onceflow/onceflow/transport/transporttest"
)

// TestMain runs the tests with parallel tests enough for their waits.
func TestMain(m *testing.M) { transporttest.Main(m) }

// suite is the transport as Watermill's Pub/Sub suite meets it.
var suite = transporttest.Suite{
	Open: func(t *testing.T) transporttest.Opener {
		prefix, service := testenv.Names()
		return transporttest.OpenerOf(New, Config{Pool: testenv.Postgres(t), TopicPrefix: prefix, ServiceName: service,
			Beginner: exactlyonce.ConsumerBeginner, PollInterval: 10 * time.Millisecond,
			Redelivery: broker.Redelivery{ResendInterval: 100 * time.Millisecond}})
	},
	// As watermill-sql's PostgreSQL runs, at every in-flight count: the
	// transport holds one message at a time whatever it is (see New).
	// Topic names are short: a topic's table names hold it with
	// TopicPrefix, and PostgreSQL truncates names past 63 bytes
	// (checkTopic).
	Features: func(int) tests.Features {
		return tests.Features{ConsumerGroups: true, ExactlyOnceDelivery: true, GuaranteedOrder: true, Persistent: true,
			GenerateTopicFunc: func(tc tests.TestContext) string {
				return "t" + strings.ReplaceAll(string(tc.TestID), "-", "")[:16]
			}}
	},
	// The payload column is JSON, the schema producers outside the service
	// share (see New); watermill-sql's own run of the suite declares a
	// BYTEA column instead.
	Publisher: func(p message.Publisher) message.Publisher { return jsonPayloads{p} },
}

// Watermill's own Pub/Sub suite on the transport as the service builds it
// (see transporttest.RunPubSubSuite).
func TestPubSubSuite(t *testing.T) { transporttest.RunPubSubSuite(t, suite) }

// The suite's closing tests, which it skips for a transport that declares
// exactly-once delivery (see transporttest.RunPubSubSuiteClosing).
func TestPubSubSuiteClosing(t *testing.T) { transporttest.RunPubSubSuiteClosing(t, suite) }

// jsonPayloads publishes each message whose payload is not JSON, as the
// suite's "x", with its payload as a JSON string instead, for the SQL
// transport's JSON payload column: the suite compares payloads only where
// they are JSON numbers, which go as they are.
type jsonPayloads struct{ message.Publisher }

func (p jsonPayloads) Publish(topic string, msgs ...*message.Message) error {
	out := make([]*message.Message, len(msgs))
	for i, m := range msgs {
		out[i] = m
		if !json.Valid(m.Payload) {
			out[i] = m.Copy()
			out[i].Payload, _ = json.Marshal(string(m.Payload))
		}
	}
	return p.Publisher.Publish(topic, out...)
}
