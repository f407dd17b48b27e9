package app

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
)

// The service on Kafka: a payment sent three times is charged and notified
// once.
func TestKafkaAppChargesOnce(t *testing.T) {
	env, _ := kafkaAppEnv(t)
	a := startApp(t, env...)
	postThriceChargesOnce(t, a, "pay-kafka-1")
}

// A producer built from Watermill's packages alone feeds the service. This
// is the message contract another team copies:
//
//	topic     TOPIC_PREFIX + "payments.requested"
//	value     JSON {"payment_id", "customer_id", "amount_cents", "currency",
//	          "requested_at" (RFC 3339)}; unknown fields are ignored
//	metadata  "idempotency_key": the payment id (sent as a Kafka header, like
//	          all metadata; the UUID goes in header _watermill_message_uuid)
//	key       the payment id, so one payment's events keep their order
//	UUID      any; copies are recognised by idempotency_key, not by UUID
//
// with this publisher (nil OverwriteSaramaConfig means
// kafka.DefaultSaramaSyncPublisherConfig: synchronous, acks from the leader,
// sarama's FNV-1a hash partitioner; producers in other languages hash keys
// differently, which costs per-payment order across producers, never
// correctness):
//
//	kafka.NewPublisher(kafka.PublisherConfig{
//		Brokers: brokers,
//		Marshaler: kafka.NewWithPartitioningMarshaler(
//			func(_ string, m *message.Message) (string, error) {
//				return m.Metadata.Get("idempotency_key"), nil
//			}),
//	}, logger)
func TestKafkaPlainWatermillProducer(t *testing.T) {
	env, prefix := kafkaAppEnv(t)
	a := startApp(t, env...)

	pub, err := kafka.NewPublisher(kafka.PublisherConfig{
		Brokers: brokerenv.Kafka(t),
		Marshaler: kafka.NewWithPartitioningMarshaler(func(_ string, m *message.Message) (string, error) {
			return m.Metadata.Get("idempotency_key"), nil
		}),
	}, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	plainProducerChargesOnce(t, a, pub, prefix+"payments.requested")
}

// Start-up against a cluster that cannot be used fails quickly, with one
// line naming KAFKA_BROKERS.
func TestKafkaStartupUnreachable(t *testing.T) {
	testenv.Integration(t)
	// The silent broker takes seconds: overlap the other tests.
	t.Parallel()
	silent, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = silent.Close() })
	for name, c := range map[string]struct {
		addr   string
		within time.Duration
	}{
		"nothing listening": {testenv.ClosedAddr(t), 3 * time.Second},
		"no answer":         {silent.Addr().String(), 14 * time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			startupFails(t, []string{"TRANSPORT=kafka", "KAFKA_BROKERS=" + c.addr}, "KAFKA_BROKERS="+c.addr, "", c.within)
		})
	}
}

// kafkaAppEnv is the environment of an App on the test cluster with topics
// and consumer groups of its own.
func kafkaAppEnv(t *testing.T) (env []string, prefix string) {
	brokers := brokerenv.Kafka(t)
	prefix, service := testenv.Names()
	return []string{"TRANSPORT=kafka", "KAFKA_BROKERS=" + strings.Join(brokers, ","), "STORE=memory",
		"TOPIC_PREFIX=" + prefix, "SERVICE_NAME=" + service}, prefix
}
