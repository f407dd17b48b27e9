package transport

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
)

// The transport on its own, with real sarama clients over TCP: every
// handler's group gets every message, the members of one group split the
// partitions, and a key's messages share one partition in publish order.
func TestKafkaTransport(t *testing.T) {
	prefix, service := testenv.Names()
	cfg := Config{Kind: Kafka, KafkaBrokers: brokerenv.Kafka(t), KafkaPartitions: 3, TopicPrefix: prefix, ServiceName: service,
		Topics: []string{topicRequested, topicCharged, topicPoison, "nack", "fanout"}}
	tr := newTestTransport(t, cfg)
	const keys, perKey = 8, 5

	t.Run("topics are created with KafkaPartitions partitions", func(t *testing.T) {
		admin, err := sarama.NewClusterAdmin(cfg.KafkaBrokers, sarama.NewConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close()
		topics := []string{prefix + topicRequested, prefix + topicCharged, prefix + topicPoison}
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

	t.Run("a subscriber initializes a topic with KafkaPartitions partitions", func(t *testing.T) {
		sub, err := tr.Subscriber("init", 1)
		if err != nil {
			t.Fatal(err)
		}
		init, ok := sub.(message.SubscribeInitializer)
		if !ok {
			t.Fatal("the Kafka subscriber does not initialize topics")
		}
		for range 2 { // the second finds the topic there
			if err := init.SubscribeInitialize("initialized"); err != nil {
				t.Fatal(err)
			}
		}
		admin, err := sarama.NewClusterAdmin(cfg.KafkaBrokers, sarama.NewConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close()
		metas, err := admin.DescribeTopics([]string{prefix + "initialized"})
		if err != nil {
			t.Fatal(err)
		}
		if m := metas[0]; !errors.Is(m.Err, sarama.ErrNoError) || len(m.Partitions) != cfg.KafkaPartitions {
			t.Errorf("topic %s: %d partitions (%v), want %d", m.Name, len(m.Partitions), m.Err, cfg.KafkaPartitions)
		}
	})

	t.Run("every handler gets every message", func(t *testing.T) {
		a := subscribe(t, tr, "a", topicRequested)
		b := subscribe(t, tr, "b", topicRequested)
		sent := kafkaPublish(t, tr, topicRequested, keys, perKey)
		for name, got := range map[string][]kafkaDelivery{"a": kafkaReceive(t, len(sent), a), "b": kafkaReceive(t, len(sent), b)} {
			checkKafkaDeliveries(t, name, sent, got)
		}
	})

	t.Run("a new group starts from the oldest message", func(t *testing.T) {
		sent := kafkaPublish(t, tr, topicPoison, keys, perKey)
		late := subscribe(t, tr, "late", topicPoison)
		checkKafkaDeliveries(t, "late", sent, kafkaReceive(t, len(sent), late))
	})

	t.Run("a nacked message is redelivered", func(t *testing.T) { checkNackRedelivered(t, tr, "nack") })

	t.Run("close ends every subscription and the publisher", func(t *testing.T) { checkCloseEnds(t, cfg, "fanout") })

	t.Run("one group splits the partitions", func(t *testing.T) {
		// The second member is another replica: its start-up finds the
		// topics there already.
		r1 := subscribe(t, tr, "r", topicCharged)
		r2 := subscribe(t, newTestTransport(t, cfg), "r", topicCharged)
		brokerenv.WaitKafkaGroup(t, cfg.KafkaBrokers, cfg.ConsumerGroup("r"), 2)
		sent := kafkaPublish(t, tr, topicCharged, keys, perKey)
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

// kafkaDelivery is a message as one of the subscriptions received it.
type kafkaDelivery struct {
	sub       int // index of the subscription in kafkaReceive's arguments
	partition int32
	uuid, key string
	seq       string
}

// kafkaPublish publishes perKey messages under each of keys idempotency
// keys, interleaved, their payload the sequence number within the key; it
// returns them by UUID.
func kafkaPublish(t *testing.T, tr *Transport, topic string, keys, perKey int) map[string]kafkaDelivery {
	t.Helper()
	sent := map[string]kafkaDelivery{}
	var msgs []*message.Message
	for seq := range perKey {
		for k := range keys {
			m := message.NewMessage(watermill.NewUUID(), fmt.Appendf(nil, "%03d", seq))
			m.Metadata.Set(keyMetadata, fmt.Sprintf("key-%d", k))
			sent[m.UUID] = kafkaDelivery{uuid: m.UUID, key: m.Metadata.Get(keyMetadata), seq: string(m.Payload)}
			msgs = append(msgs, m)
		}
	}
	if err := tr.Publisher().Publish(topic, msgs...); err != nil {
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
				select {
				case in <- kafkaDeliveryOf(i, m):
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
