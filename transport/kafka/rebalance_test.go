package kafka

import (
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
	"github.com/onceflow/onceflow/transport/transporttest"
)

// A member whose partitions a rebalance takes away holds the rebalance
// open while it has messages out, and commits those acked meanwhile: the
// partitions' next owner does not get them again. (sarama ends the
// session's context when the rebalance begins; the offsets marked after
// that are committed as the session is released.)
func TestKafkaSubscriberRebalanceCommitsMessagesOut(t *testing.T) {
	prefix, service := testenv.Names()
	cfg := Config{Brokers: brokerenv.Kafka(t), Partitions: 4, TopicPrefix: prefix, ServiceName: service,
		KeyMetadata: transporttest.KeyMetadata, Topics: []string{topicRequested}}
	tr := newTestTransport(t, cfg)
	topic, group := prefix+topicRequested, cfg.names().ConsumerGroup("rebalance")
	sent := publishKeyed(t, tr, topicRequested, 8, 1)

	first := subscription(t, cfg, "rebalance", topic)
	held := transporttest.Receive(t, first, len(sent), func(*message.Message) bool { return true }) // out, unsettled
	second := subscription(t, cfg, "rebalance", topic)

	admin, err := sarama.NewClusterAdmin(cfg.Brokers, sarama.NewConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	state := func() string {
		gs, err := admin.DescribeConsumerGroups([]string{group})
		if err != nil || len(gs) != 1 {
			return ""
		}
		return gs[0].State
	}
	transporttest.WaitFor(t, "the second member's join started a rebalance", func() bool { return state() == "PreparingRebalance" })
	time.Sleep(2 * heartbeatInterval) // the first member's heartbeat learns of it
	if s := state(); s != "PreparingRebalance" {
		t.Fatalf("group %s with 8 messages out of its first member: want the rebalance held open", s)
	}
	for _, m := range held {
		m.Ack()
	}
	brokerenv.WaitKafkaGroup(t, cfg.Brokers, group, 2)

	client, err := sarama.NewClient(cfg.Brokers, sarama.NewConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	partitions := []int32{0, 1, 2, 3}
	committed, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: partitions})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range partitions {
		end, err := client.GetOffset(topic, p, sarama.OffsetNewest)
		if err != nil {
			t.Fatal(err)
		}
		if b := committed.GetBlock(topic, p); b == nil || b.Offset != end {
			t.Errorf("partition %d: committed %+v, want its end, %d", p, b, end)
		}
	}
	select {
	case m := <-second:
		t.Errorf("the second member got %s, acked by the first during the rebalance", m.UUID)
	default:
	}
}

// subscription subscribes a member of handler's group to topic, 32
// messages in flight, until the test ends.
func subscription(t *testing.T, cfg Config, handler, topic string) <-chan *message.Message {
	t.Helper()
	s, err := newSubscriber(cfg, handler, 32, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ch, err := s.Subscribe(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}
