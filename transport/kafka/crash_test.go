package kafka

import (
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
	"github.com/onceflow/onceflow/transport/transporttest"
)

// A consumer group waits for a rebalance no longer than the client waits
// for the coordinator's answer: a JoinGroup or SyncGroup may be held for
// the rebalance timeout, and the read timeout covers it with a session
// timeout to spare.
func TestKafkaGroupReadTimeoutCoversARebalance(t *testing.T) {
	sc := subscriberConfig(Config{ServiceName: "onceflow"})
	g := sc.Consumer.Group
	if need := g.Rebalance.Timeout + g.Session.Timeout; sc.Net.ReadTimeout <= need {
		t.Errorf("Net.ReadTimeout = %v, want more than Rebalance.Timeout + Session.Timeout = %v",
			sc.Net.ReadTimeout, need)
	}
	if err := sc.Validate(); err != nil {
		t.Error(err)
	}
}

// A member that crashes — its connections cut, no LeaveGroup — loses its
// partitions to the survivor within the session timeout, a heartbeat and
// the rebalance timeout (plus margin), and the survivor then consumes
// everything published after the crash.
func TestKafkaGroupSurvivesACrashedMember(t *testing.T) {
	prefix, service := testenv.Names()
	cfg := Config{Brokers: brokerenv.Kafka(t), Partitions: 4, TopicPrefix: prefix, ServiceName: service,
		KeyMetadata: transporttest.KeyMetadata, Topics: []string{topicRequested}}
	tr := newTestTransport(t, cfg) // creates the topics; publishes
	topic := prefix + topicRequested
	group := cfg.names().ConsumerGroup("crash")

	deliveries := make(chan delivery, 1000)
	crash := &transporttest.CutDialer{}
	groupMember(t, cfg, group, topic, 0, nil, deliveries)
	groupMember(t, cfg, group, topic, 1, crash, deliveries)
	brokerenv.WaitKafkaGroup(t, cfg.Brokers, group, 2)

	const keys, perKey = 8, 2
	before := publishKeyed(t, tr, topicRequested, keys, perKey)
	doomed := map[int32]bool{} // the partitions the crashing member owns
	collect(t, deliveries, before, 20*time.Second, func(d delivery) {
		if d.sub == 1 {
			doomed[d.partition] = true
		}
	})
	if len(doomed) == 0 {
		t.Fatal("the second member consumed nothing before the crash")
	}

	crash.Cut()
	crashed := time.Now()
	after := publishKeyed(t, tr, topicRequested, keys, perKey)
	var recovered time.Duration
	limit := sessionTimeout + heartbeatInterval + rebalanceTimeout + 10*time.Second
	collect(t, deliveries, after, limit, func(d delivery) {
		if d.sub != 0 {
			t.Errorf("the crashed member consumed %s", d.uuid)
		}
		if doomed[d.partition] && recovered == 0 {
			recovered = time.Since(crashed)
		}
	})
	t.Logf("the survivor consumed the crashed member's partitions %v after the crash (limit %v)",
		recovered.Round(100*time.Millisecond), limit)
}

// groupMember subscribes a member of group, numbered sub, to topic
// with the service's consumer group configuration, dialing through dial
// when it is not nil. It acks every message and sends it to deliveries.
func groupMember(t *testing.T, cfg Config, group, topic string, sub int, dial *transporttest.CutDialer, deliveries chan<- delivery) {
	t.Helper()
	sc := subscriberConfig(cfg)
	if dial != nil {
		sc.Net.Proxy.Enable, sc.Net.Proxy.Dialer = true, dial
	}
	s, err := newGroupSubscriber(cfg.Brokers, group, sc, 1, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ch, err := s.Subscribe(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for m := range ch {
			m.Ack()
			deliveries <- deliveryOf(sub, m)
		}
	}()
}

// deliveryOf describes m as subscription sub received it.
func deliveryOf(sub int, m *message.Message) delivery {
	p, ok := positionFromCtx(m.Context())
	if !ok {
		p.Partition = -1
	}
	return delivery{sub: sub, partition: p.Partition, uuid: m.UUID,
		key: m.Metadata.Get(transporttest.KeyMetadata), seq: string(m.Payload)}
}

// collect reads deliveries until every message of sent arrived,
// calling each for those, and ignoring redeliveries of earlier messages.
func collect(t *testing.T, deliveries <-chan delivery, sent map[string]delivery,
	limit time.Duration, each func(delivery)) {
	t.Helper()
	timeout := time.After(limit)
	seen := map[string]bool{}
	for len(seen) < len(sent) {
		select {
		case d := <-deliveries:
			if _, ok := sent[d.uuid]; ok && !seen[d.uuid] {
				seen[d.uuid] = true
				each(d)
			}
		case <-timeout:
			t.Fatalf("received %d of %d messages within %v", len(seen), len(sent), limit)
		}
	}
}
