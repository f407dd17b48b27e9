package transport

import (
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
)

// A consumer group waits for a rebalance no longer than the client waits
// for the coordinator's answer: a JoinGroup or SyncGroup may be held for
// the rebalance timeout, and the read timeout covers it with a session
// timeout to spare.
func TestKafkaGroupReadTimeoutCoversARebalance(t *testing.T) {
	sc := kafkaSubscriberConfig(Config{ServiceName: "onceflow"})
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
	cfg := Config{Kind: Kafka, KafkaBrokers: brokerenv.Kafka(t), KafkaPartitions: 4, TopicPrefix: prefix, ServiceName: service,
		Topics: []string{topicRequested}}
	tr := newTestTransport(t, cfg) // creates the topics; publishes
	topic := prefix + topicRequested
	group := cfg.ConsumerGroup("crash")

	deliveries := make(chan kafkaDelivery, 1000)
	crash := &cuttableDialer{}
	kafkaGroupMember(t, cfg, group, topic, 0, nil, deliveries)
	kafkaGroupMember(t, cfg, group, topic, 1, crash, deliveries)
	brokerenv.WaitKafkaGroup(t, cfg.KafkaBrokers, group, 2)

	const keys, perKey = 8, 2
	before := kafkaPublish(t, tr, topicRequested, keys, perKey)
	doomed := map[int32]bool{} // the partitions the crashing member owns
	kafkaCollect(t, deliveries, before, 20*time.Second, func(d kafkaDelivery) {
		if d.sub == 1 {
			doomed[d.partition] = true
		}
	})
	if len(doomed) == 0 {
		t.Fatal("the second member consumed nothing before the crash")
	}

	crash.cut()
	crashed := time.Now()
	after := kafkaPublish(t, tr, topicRequested, keys, perKey)
	var recovered time.Duration
	limit := kafkaSessionTimeout + kafkaHeartbeatInterval + kafkaRebalanceTimeout + 10*time.Second
	kafkaCollect(t, deliveries, after, limit, func(d kafkaDelivery) {
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

// kafkaGroupMember subscribes a member of group, numbered sub, to topic
// with the service's consumer group configuration, dialing through dial
// when it is not nil. It acks every message and sends it to deliveries.
func kafkaGroupMember(t *testing.T, cfg Config, group, topic string, sub int, dial *cuttableDialer, deliveries chan<- kafkaDelivery) {
	t.Helper()
	sc := kafkaSubscriberConfig(cfg)
	if dial != nil {
		sc.Net.Proxy.Enable, sc.Net.Proxy.Dialer = true, dial
	}
	s, err := newKafkaGroupSubscriber(cfg.KafkaBrokers, group, sc, 1, watermill.NopLogger{})
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
			deliveries <- kafkaDeliveryOf(sub, m)
		}
	}()
}

// kafkaDeliveryOf describes m as subscription sub received it.
func kafkaDeliveryOf(sub int, m *message.Message) kafkaDelivery {
	p, ok := kafkaPositionFromCtx(m.Context())
	if !ok {
		p.Partition = -1
	}
	return kafkaDelivery{sub: sub, partition: p.Partition, uuid: m.UUID,
		key: m.Metadata.Get(keyMetadata), seq: string(m.Payload)}
}

// kafkaCollect reads deliveries until every message of sent arrived,
// calling each for those, and ignoring redeliveries of earlier messages.
func kafkaCollect(t *testing.T, deliveries <-chan kafkaDelivery, sent map[string]kafkaDelivery,
	limit time.Duration, each func(kafkaDelivery)) {
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

// cuttableDialer dials TCP until cut, which closes every connection it made
// and fails every later dial: a process killed without a goodbye, as far as
// the broker can tell.
type cuttableDialer struct {
	mu    sync.Mutex
	down  bool
	conns []net.Conn
}

func (d *cuttableDialer) Dial(network, addr string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.down {
		return nil, errors.New("cut")
	}
	c, err := net.DialTimeout(network, addr, kafkaDialTimeout)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *cuttableDialer) cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down = true
	for _, c := range d.conns {
		_ = c.Close()
	}
}
