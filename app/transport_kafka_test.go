package app

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/internal/testenv"
)

// The transport on its own, with real sarama clients over TCP: every
// handler's group gets every message, the members of one group split the
// partitions, and a key's messages share one partition in publish order.
func TestKafkaTransport(t *testing.T) {
	prefix, service := kafkaNames()
	cfg := Config{KafkaBrokers: testenv.Kafka(t), KafkaPartitions: 3, TopicPrefix: prefix, ServiceName: service}
	tr := kafkaTestTransport(t, cfg)
	const keys, perKey = 8, 5

	t.Run("topics are created with KAFKA_PARTITIONS partitions", func(t *testing.T) {
		admin, err := sarama.NewClusterAdmin(cfg.KafkaBrokers, sarama.NewConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close()
		topics := []string{prefix + handlers.TopicPaymentRequested, prefix + handlers.TopicPaymentCharged, prefix + PoisonTopic}
		metas, err := admin.DescribeTopics(topics)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range metas {
			if !errors.Is(m.Err, sarama.ErrNoError) || len(m.Partitions) != cfg.KafkaPartitions {
				t.Errorf("topic %s: %d partitions (%v), want %d", m.Name, len(m.Partitions), m.Err, cfg.KafkaPartitions)
			}
		}
	})

	t.Run("every handler gets every message", func(t *testing.T) {
		a := kafkaSubscribe(t, tr, "a", handlers.TopicPaymentRequested)
		b := kafkaSubscribe(t, tr, "b", handlers.TopicPaymentRequested)
		sent := kafkaPublish(t, tr, handlers.TopicPaymentRequested, keys, perKey)
		for name, got := range map[string][]kafkaDelivery{"a": kafkaReceive(t, len(sent), a), "b": kafkaReceive(t, len(sent), b)} {
			checkKafkaDeliveries(t, name, sent, got)
		}
	})

	t.Run("a new group starts from the oldest message", func(t *testing.T) {
		sent := kafkaPublish(t, tr, PoisonTopic, keys, perKey)
		late := kafkaSubscribe(t, tr, "late", PoisonTopic)
		checkKafkaDeliveries(t, "late", sent, kafkaReceive(t, len(sent), late))
	})

	t.Run("one group splits the partitions", func(t *testing.T) {
		// The second member is another replica: its start-up finds the
		// topics there already.
		r1 := kafkaSubscribe(t, tr, "r", handlers.TopicPaymentCharged)
		r2 := kafkaSubscribe(t, kafkaTestTransport(t, cfg), "r", handlers.TopicPaymentCharged)
		waitKafkaGroup(t, cfg, consumerGroup(cfg, "r"), 2)
		sent := kafkaPublish(t, tr, handlers.TopicPaymentCharged, keys, perKey)
		got := kafkaReceive(t, len(sent), r1, r2)
		checkKafkaDeliveries(t, "r", sent, got)
		partitions := map[int]map[int32]bool{0: {}, 1: {}}
		for _, d := range got {
			partitions[d.sub][d.partition] = true
		}
		if len(partitions[0]) == 0 || len(partitions[1]) == 0 {
			t.Errorf("members consumed partitions %v and %v, want the work split", partitions[0], partitions[1])
		}
		for p := range partitions[0] {
			if partitions[1][p] {
				t.Errorf("partition %d consumed by both members of one group", p)
			}
		}
	})
}

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
		Brokers: testenv.Kafka(t),
		Marshaler: kafka.NewWithPartitioningMarshaler(func(_ string, m *message.Message) (string, error) {
			return m.Metadata.Get("idempotency_key"), nil
		}),
	}, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	const payments, copies = 3, 2
	publishPlainPayments(t, pub, prefix+"payments.requested", payments, copies)
	waitForCopies(t, a, payments, copies)
	if got := a.summary(t); got.Charges != payments || got.Notifications != payments {
		t.Errorf("summary = %+v, want %d charges and %d notifications", got, payments, payments)
	}
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
		"nothing listening": {kafkaClosedAddr(t), 3 * time.Second},
		"no answer":         {silent.Addr().String(), 14 * time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg, err := LoadConfig([]string{"TRANSPORT=kafka", "KAFKA_BROKERS=" + c.addr, "HTTP_ADDR=127.0.0.1:0"})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			a, err := New(t.Context(), cfg, slog.New(slog.NewTextHandler(testWriter{t}, nil)))
			took := time.Since(start)
			if err == nil {
				_ = a.Close()
				t.Fatal("New succeeded without a Kafka cluster")
			}
			if msg := err.Error(); !strings.Contains(msg, "KAFKA_BROKERS="+c.addr) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line naming KAFKA_BROKERS", msg)
			}
			if took > c.within {
				t.Errorf("New failed after %v, want within %v", took, c.within)
			}
			t.Logf("failed after %v: %v", took.Round(time.Millisecond), err)
		})
	}
}

// kafkaNames returns a topic prefix and a service name unique to a test, so
// that tests sharing the cluster never share a topic or a consumer group.
func kafkaNames() (prefix, service string) {
	id := testenv.NewID()[:8]
	return "test." + id + ".", "onceflow-" + id
}

// kafkaAppEnv is the environment of an App on the test cluster with topics
// and consumer groups of its own.
func kafkaAppEnv(t *testing.T) (env []string, prefix string) {
	brokers := testenv.Kafka(t)
	prefix, service := kafkaNames()
	return []string{"TRANSPORT=kafka", "KAFKA_BROKERS=" + strings.Join(brokers, ","), "STORE=memory",
		"TOPIC_PREFIX=" + prefix, "SERVICE_NAME=" + service}, prefix
}

// kafkaTestTransport is newKafka behind the topic prefix, as New builds it,
// with the payments topics and poison, closed when t ends.
func kafkaTestTransport(t *testing.T, cfg Config) transport {
	t.Helper()
	topics := []string{handlers.TopicPaymentRequested, handlers.TopicPaymentCharged, PoisonTopic}
	tr, err := newKafka(t.Context(), cfg, topics, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tr.close(); err != nil {
			t.Errorf("closing transport: %v", err)
		}
	})
	return withTopicPrefix(tr, cfg.TopicPrefix)
}

// waitKafkaGroup waits until group is stable with n members, each with its
// partitions assigned.
func waitKafkaGroup(t *testing.T, cfg Config, group string, n int) {
	t.Helper()
	admin, err := sarama.NewClusterAdmin(cfg.KafkaBrokers, sarama.NewConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	waitFor(t, fmt.Sprintf("group %s stable with %d members", group, n), func() bool {
		gs, err := admin.DescribeConsumerGroups([]string{group})
		return err == nil && len(gs) == 1 && gs[0].State == "Stable" && len(gs[0].Members) == n
	})
}

// kafkaClosedAddr returns a loopback address where nothing listens.
func kafkaClosedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// kafkaDelivery is a message as one of the subscriptions received it.
type kafkaDelivery struct {
	sub       int // index of the subscription in kafkaReceive's arguments
	partition int32
	uuid, key string
	seq       string
}

// kafkaSubscribe subscribes handler's subscriber of tr to topic until the
// test ends.
func kafkaSubscribe(t *testing.T, tr transport, handler, topic string) <-chan *message.Message {
	t.Helper()
	s, err := tr.subscriber(handler)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := s.Subscribe(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// kafkaPublish publishes perKey messages under each of keys idempotency
// keys, interleaved, their payload the sequence number within the key; it
// returns them by UUID.
func kafkaPublish(t *testing.T, tr transport, topic string, keys, perKey int) map[string]kafkaDelivery {
	t.Helper()
	sent := map[string]kafkaDelivery{}
	var msgs []*message.Message
	for seq := range perKey {
		for k := range keys {
			m := message.NewMessage(watermill.NewUUID(), fmt.Appendf(nil, "%03d", seq))
			m.Metadata.Set(handlers.IdempotencyKeyMetadata, fmt.Sprintf("key-%d", k))
			sent[m.UUID] = kafkaDelivery{uuid: m.UUID, key: m.Metadata.Get(handlers.IdempotencyKeyMetadata), seq: string(m.Payload)}
			msgs = append(msgs, m)
		}
	}
	if err := tr.publisher.Publish(topic, msgs...); err != nil {
		t.Fatal(err)
	}
	return sent
}

// kafkaReceive acks and returns the first n messages of the subscriptions,
// in the order each subscription received them.
func kafkaReceive(t *testing.T, n int, subs ...<-chan *message.Message) []kafkaDelivery {
	t.Helper()
	ctx := t.Context()
	in := make(chan kafkaDelivery)
	for i, ch := range subs {
		go func() {
			for m := range ch {
				m.Ack()
				p, ok := kafka.MessagePartitionFromCtx(m.Context())
				if !ok {
					p = -1
				}
				d := kafkaDelivery{sub: i, partition: p, uuid: m.UUID,
					key: m.Metadata.Get(handlers.IdempotencyKeyMetadata), seq: string(m.Payload)}
				select {
				case in <- d:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	timeout := time.After(20 * time.Second)
	var got []kafkaDelivery
	for len(got) < n {
		select {
		case d := <-in:
			got = append(got, d)
		case <-timeout:
			t.Fatalf("received %d of %d messages", len(got), n)
		}
	}
	return got
}

// checkKafkaDeliveries checks that got holds every sent message once, that
// the messages of a key came from one partition, and in publish order.
func checkKafkaDeliveries(t *testing.T, name string, sent map[string]kafkaDelivery, got []kafkaDelivery) {
	t.Helper()
	seen := map[string]bool{}
	partitionOf := map[string]int32{}
	lastSeq := map[string]string{}
	for _, d := range got {
		want, ok := sent[d.uuid]
		switch {
		case !ok || d.key != want.key || d.seq != want.seq:
			t.Errorf("%s got %+v, not a message that was sent", name, d)
		case seen[d.uuid]:
			t.Errorf("%s got %s twice", name, d.uuid)
		case d.partition < 0:
			t.Errorf("%s got %s without its partition in the context", name, d.uuid)
		}
		seen[d.uuid] = true
		if p, ok := partitionOf[d.key]; ok && p != d.partition {
			t.Errorf("%s got %s from partitions %d and %d, want one partition per key", name, d.key, p, d.partition)
		}
		partitionOf[d.key] = d.partition
		if d.seq < lastSeq[d.key] {
			t.Errorf("%s got %s message %s after %s, want publish order", name, d.key, d.seq, lastSeq[d.key])
		}
		lastSeq[d.key] = d.seq
	}
	if len(seen) != len(sent) {
		t.Errorf("%s got %d distinct messages, want %d", name, len(seen), len(sent))
	}
}
