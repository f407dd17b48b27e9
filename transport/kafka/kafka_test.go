package kafka

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
	"github.com/onceflow/onceflow/transport/broker"
	"github.com/onceflow/onceflow/transport/transporttest"
)

// The transport on its own, with real sarama clients over TCP: every
// handler's group gets every message, the members of one group split the
// partitions, and a key's messages share one partition in publish order.
func TestKafkaTransport(t *testing.T) {
	prefix, service := testenv.Names()
	cfg := Config{Brokers: brokerenv.Kafka(t), Partitions: 3, TopicPrefix: prefix, ServiceName: service,
		KeyMetadata: transporttest.KeyMetadata, Topics: []string{topicRequested, topicCharged, topicPoison, "nack", "fanout"}}
	tr := newTestTransport(t, cfg)
	const keys, perKey = 8, 5

	t.Run("topics are created with KafkaPartitions partitions", func(t *testing.T) {
		admin, err := sarama.NewClusterAdmin(cfg.Brokers, sarama.NewConfig())
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
			if !errors.Is(m.Err, sarama.ErrNoError) || len(m.Partitions) != cfg.Partitions {
				t.Errorf("topic %s: %d partitions (%v), want %d", m.Name, len(m.Partitions), m.Err, cfg.Partitions)
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
		admin, err := sarama.NewClusterAdmin(cfg.Brokers, sarama.NewConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close()
		metas, err := admin.DescribeTopics([]string{prefix + "initialized"})
		if err != nil {
			t.Fatal(err)
		}
		if m := metas[0]; !errors.Is(m.Err, sarama.ErrNoError) || len(m.Partitions) != cfg.Partitions {
			t.Errorf("topic %s: %d partitions (%v), want %d", m.Name, len(m.Partitions), m.Err, cfg.Partitions)
		}
	})

	t.Run("every handler gets every message", func(t *testing.T) {
		a := transporttest.Subscribe(t, tr, "a", topicRequested)
		b := transporttest.Subscribe(t, tr, "b", topicRequested)
		sent := publishKeyed(t, tr, topicRequested, keys, perKey)
		for name, got := range map[string][]delivery{"a": receiveDeliveries(t, len(sent), a), "b": receiveDeliveries(t, len(sent), b)} {
			checkKafkaDeliveries(t, name, sent, got)
		}
	})

	t.Run("a new group starts from the oldest message", func(t *testing.T) {
		sent := publishKeyed(t, tr, topicPoison, keys, perKey)
		late := transporttest.Subscribe(t, tr, "late", topicPoison)
		checkKafkaDeliveries(t, "late", sent, receiveDeliveries(t, len(sent), late))
	})

	t.Run("a nacked message is redelivered", func(t *testing.T) { transporttest.CheckNackRedelivered(t, tr, "nack") })

	t.Run("close ends every subscription and the publisher", func(t *testing.T) {
		transporttest.CheckCloseEnds(t, transporttest.OpenerOf(New, cfg), "fanout")
	})

	t.Run("one group splits the partitions", func(t *testing.T) {
		// The second member is another replica: its start-up finds the
		// topics there already.
		r1 := transporttest.Subscribe(t, tr, "r", topicCharged)
		r2 := transporttest.Subscribe(t, newTestTransport(t, cfg), "r", topicCharged)
		brokerenv.WaitKafkaGroup(t, cfg.Brokers, cfg.names().ConsumerGroup("r"), 2)
		sent := publishKeyed(t, tr, topicCharged, keys, perKey)
		got := receiveDeliveries(t, len(sent), r1, r2)
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

// delivery is a message as one of the subscriptions received it.
type delivery struct {
	sub       int // index of the subscription in receiveDeliveries's arguments
	partition int32
	uuid, key string
	seq       string
}

// publishKeyed publishes perKey messages under each of keys idempotency
// keys, interleaved, their payload the sequence number within the key; it
// returns them by UUID.
func publishKeyed(t *testing.T, tr *broker.Transport, topic string, keys, perKey int) map[string]delivery {
	t.Helper()
	sent := map[string]delivery{}
	var msgs []*message.Message
	for seq := range perKey {
		for k := range keys {
			m := message.NewMessage(watermill.NewUUID(), fmt.Appendf(nil, "%03d", seq))
			m.Metadata.Set(transporttest.KeyMetadata, fmt.Sprintf("key-%d", k))
			sent[m.UUID] = delivery{uuid: m.UUID, key: m.Metadata.Get(transporttest.KeyMetadata), seq: string(m.Payload)}
			msgs = append(msgs, m)
		}
	}
	if err := tr.Publisher().Publish(topic, msgs...); err != nil {
		t.Fatal(err)
	}
	return sent
}

// receiveDeliveries acks and returns the first n messages of the subscriptions,
// in the order each subscription received them.
func receiveDeliveries(t *testing.T, n int, subs ...<-chan *message.Message) []delivery {
	t.Helper()
	ctx := t.Context()
	in := make(chan delivery)
	for i, ch := range subs {
		go func() {
			for m := range ch {
				m.Ack()
				select {
				case in <- deliveryOf(i, m):
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	timeout := time.After(20 * time.Second)
	var got []delivery
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
func checkKafkaDeliveries(t *testing.T, name string, sent map[string]delivery, got []delivery) {
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
