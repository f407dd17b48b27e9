package kafka_test

import (
	"net"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/app/apptest"
	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
	"github.com/onceflow/onceflow/transport"
)

// The service on Kafka: a request sent three times is charged, noticed
// and receipted once.
func TestKafkaAppChargesOnce(t *testing.T) {
	s := apptest.Start(t, testdomain.Domain(), brokerenv.ServiceEnv(t, transport.Kafka, nil)...)
	flowtest.PostThriceChargesOnce(t, s, "req-kafka-1")
}

// A producer built from Watermill's packages alone feeds the service. This
// is the message contract another team copies (with the domain's topic and
// event; the test domain's here):
//
//	topic     TOPIC_PREFIX + the domain's topic ("testdomain.requested")
//	value     the event's JSON ({"id", "amount"}); unknown fields are ignored
//	metadata  "idempotency_key": the event's id (sent as a Kafka header, like
//	          all metadata; the UUID goes in header _watermill_message_uuid)
//	key       the id, so one request's events keep their order
//	UUID      any; copies are recognised by idempotency_key, not by UUID
//
// with this publisher (nil OverwriteSaramaConfig means
// kafka.DefaultSaramaSyncPublisherConfig: synchronous, acks from the leader,
// sarama's FNV-1a hash partitioner; producers in other languages hash keys
// differently, which costs per-key order across producers, never
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
	env := brokerenv.ServiceEnv(t, transport.Kafka, nil)
	s := apptest.Start(t, testdomain.Domain(), env...)

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
	flowtest.PlainProducerChargesOnce(t, s, pub, testenv.Setting(env, "TOPIC_PREFIX")+testdomain.TopicRequested)
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
			apptest.StartFails(t, testdomain.Domain(), []string{"TRANSPORT=kafka", "KAFKA_BROKERS=" + c.addr},
				"KAFKA_BROKERS="+c.addr, "", c.within)
		})
	}
}
