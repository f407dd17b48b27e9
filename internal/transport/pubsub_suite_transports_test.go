package transport

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/tests"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
)

// The features start from those each Watermill adapter declares in its own
// run of the suite; each difference says why. Every transport's suite
// constructor is a replica of one handler, subscribing in the handler's
// consumer group, queue or durable consumer: a second subscriber shares
// the first one's messages rather than getting them all again, so
// NewSubscriberReceivesOldMessages is false wherever an adapter declares
// it for constructors that each open a group of their own.
var suiteTransports = map[string]suiteTransport{
	GoChannel: {
		config: func(*testing.T) Config { return Config{} },
		// As Watermill's GoChannel declares itself.
		features: func(int) tests.Features {
			return tests.Features{ExactlyOnceDelivery: true, RequireSingleInstance: true}
		},
		// The in-process pub/sub is not Watermill's GoChannel: it keeps
		// nothing for a topic nobody subscribes to, and its Publish
		// returns once every subscription acked the message (see
		// inProcess). The suite publishes before it subscribes, or
		// publishes and reads on one goroutine, in every test that runs
		// at these features; TestGoChannelTransport checks the
		// transport's own contract instead.
		skip: map[string]string{
			"TestPublishSubscribe":                  suiteDropsEarly,
			"TestConcurrentSubscribe":               suiteDropsEarly,
			"TestConcurrentSubscribeMultipleTopics": suiteDropsEarly,
			"TestResendOnError":                     suiteDropsEarly,
			"TestContinueAfterErrors":               suiteDropsEarly,
			"TestPublisherClose":                    suiteDropsEarly,
			"TestTopic":                             suiteDropsEarly,
			"TestSubscribeCtx":                      suiteDropsEarly,
			"TestMessageCtx":                        "the test publishes and then reads on one goroutine, and the in-process Publish returns only once the message was acked",
		},
	},
	Kafka: {
		config: func(t *testing.T) Config {
			prefix, service := testenv.Names()
			return Config{Kind: Kafka, KafkaBrokers: brokerenv.Kafka(t), TopicPrefix: prefix, ServiceName: service}
		},
		// As watermill-kafka's consumer group run. GuaranteedOrder stays
		// false: the transport keeps the order of one Kafka key, its
		// idempotency key or else the message UUID (kafkaMarshaler), and
		// the suite's messages carry no idempotency key.
		// TestKafkaSubscriberKeepsKeyOrder checks a key's order.
		features: func(int) tests.Features {
			return tests.Features{ConsumerGroups: true, Persistent: true}
		},
	},
	AMQP: {
		config: func(t *testing.T) Config {
			prefix, service := testenv.Names()
			return Config{Kind: AMQP, AMQPURL: brokerenv.AMQP(t), AMQPConnectTimeout: 5 * time.Second,
				TopicPrefix: prefix, ServiceName: service}
		},
		// As watermill-amqp's durable pub/sub run, but for order: a
		// subscriber holding n messages has them out at once, one per
		// consumer of the queue, in no order between them; with one it
		// keeps RabbitMQ's.
		features: func(inFlight int) tests.Features {
			return tests.Features{ConsumerGroups: true, Persistent: true,
				GuaranteedOrder: inFlight == 1, GuaranteedOrderWithSingleSubscriber: true}
		},
	},
	SQL: {
		config: func(t *testing.T) Config {
			prefix, service := testenv.Names()
			return Config{Kind: SQL, Pool: testenv.Postgres(t), TopicPrefix: prefix, ServiceName: service,
				SQLPollInterval: 10 * time.Millisecond, ResendInterval: 100 * time.Millisecond}
		},
		// As watermill-sql's PostgreSQL runs, at every in-flight count:
		// the transport holds one message at a time whatever it is (see
		// newSQL). Topic names are short: a topic's table names hold it
		// with TopicPrefix, and PostgreSQL truncates names past 63 bytes
		// (checkSQLTopic).
		features: func(int) tests.Features {
			return tests.Features{ConsumerGroups: true, ExactlyOnceDelivery: true, GuaranteedOrder: true, Persistent: true,
				GenerateTopicFunc: func(tc tests.TestContext) string {
					return "t" + strings.ReplaceAll(string(tc.TestID), "-", "")[:16]
				}}
		},
		// The payload column is JSON, the schema producers outside the
		// service share (see newSQL); watermill-sql's own run of the suite
		// declares a BYTEA column instead.
		publisher: func(p message.Publisher) message.Publisher { return jsonPayloads{p} },
	},
	NATS: {
		// A push consumer's server may push to a subscription as it ends
		// — the backlog to one that ends the moment it began, or a
		// message published just after the last one ended, before the
		// server saw the interest go — and what it pushed then comes back
		// after the ack deadline (see newNATS): 30 s by default, past the
		// suite's 15 s reads, so the suite's is 3 s.
		config: func(t *testing.T) Config {
			cfg := natsTestConfig(t, brokerenv.NATS(t))
			cfg.AckDeadline = 3 * time.Second
			return cfg
		},
		// As watermill-nats's JetStream runs, but for three things. Order:
		// a subscriber holding n messages has them out at once, in no
		// order between them. No RequireSingleInstance, which
		// watermill-nats sets to get by: replicas sharing a handler's
		// durable consumer are what the service runs. And delivery at
		// least once, not exactly once: a message the server pushed as a
		// subscription ended comes again after the ack deadline, and an
		// ack lost with its connection comes again too; the receiver
		// makes the handler's effects once.
		features: func(inFlight int) tests.Features {
			return tests.Features{ConsumerGroups: true, Persistent: true,
				GuaranteedOrder: inFlight == 1, GuaranteedOrderWithSingleSubscriber: true}
		},
	},
	RedisStream: {
		config: func(t *testing.T) Config {
			cfg, _ := redisStreamTestConfig(t, "redis://"+testenv.RedisAddr()+"/0")
			return cfg
		},
		// As watermill-redisstream's run.
		features: func(int) tests.Features {
			return tests.Features{ConsumerGroups: true, Persistent: true, GuaranteedOrderWithSingleSubscriber: true}
		},
	},
}

// suiteDropsEarly is why the in-process transport skips a suite test that
// publishes before it subscribes.
const suiteDropsEarly = "the test publishes before it subscribes, and the in-process pub/sub drops a message that no subscription is open for"

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
