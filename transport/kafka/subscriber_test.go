package kafka

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
	"github.com/onceflow/onceflow/transport/broker"
	"github.com/onceflow/onceflow/transport/transporttest"
)

// The subscriber against a broker, 32 messages in flight over 4
// partitions, handlers taking 0–2 ms: each key's messages are handled in
// publish order and none is missing, also when a member of the group
// crashes mid-stream with messages in flight.
func TestKafkaSubscriberKeepsKeyOrder(t *testing.T) {
	prefix, service := testenv.Names()
	cfg := Config{Brokers: brokerenv.Kafka(t), Partitions: 4, TopicPrefix: prefix, ServiceName: service,
		KeyMetadata: transporttest.KeyMetadata, Topics: []string{topicRequested, topicCharged}}
	tr := newTestTransport(t, cfg)
	const keys, perKey, inFlight = 500, 10, 32

	t.Run("one member: every key in order, once", func(t *testing.T) {
		sent := publishMixed(t, tr, topicRequested, keys, perKey)
		h := newKeyHistory()
		m := h.member(t, cfg, "order", prefix+topicRequested, inFlight)
		m.start()
		h.waitAll(t, sent)
		h.checkOrder(t, perKey, false)
		if peak := m.peakOut(); peak > inFlight || peak < 2 {
			t.Errorf("at most %d messages were out at once, want 2 to %d", peak, inFlight)
		}
	})

	t.Run("a member crashes mid-stream: the other redelivers what it had out", func(t *testing.T) {
		sent := publishMixed(t, tr, topicCharged, keys, perKey)
		h := newKeyHistory()
		doomed := h.member(t, cfg, "crash", prefix+topicCharged, inFlight)
		survivor := h.member(t, cfg, "crash", prefix+topicCharged, inFlight)
		brokerenv.WaitKafkaGroup(t, cfg.Brokers, cfg.names().ConsumerGroup("crash"), 2)
		out := doomed.crashAfter(len(sent) / 10)
		doomed.start()
		survivor.start()
		lost := <-out // what the crashed member had out: never acked
		h.waitAll(t, sent)
		transporttest.WaitFor(t, "the survivor redelivered every message out at the crash", func() bool {
			return survivor.handledAll(lost)
		})
		h.checkOrder(t, perKey, true)
		t.Logf("the crashed member had %d messages out; %d deliveries in all for %d messages",
			len(lost), h.deliveries(), len(sent))
	})
}

// publishMixed publishes perKey messages under each of keys
// idempotency keys like publishKeyed, each key's in sequence order, the
// keys mixed at random: a key's next message is often among the next few
// of its partition.
func publishMixed(t *testing.T, tr *broker.Transport, topic string, keys, perKey int) map[string]delivery {
	t.Helper()
	next := make([]int, keys) // per key, the next sequence number
	var open []int            // the keys with messages left
	for k := range keys {
		open = append(open, k)
	}
	sent := map[string]delivery{}
	var msgs []*message.Message
	for len(open) > 0 {
		i := rand.IntN(len(open))
		k := open[i]
		m := message.NewMessage(watermill.NewUUID(), fmt.Appendf(nil, "%03d", next[k]))
		m.Metadata.Set(transporttest.KeyMetadata, fmt.Sprintf("key-%d", k))
		sent[m.UUID] = delivery{uuid: m.UUID, key: m.Metadata.Get(transporttest.KeyMetadata), seq: string(m.Payload)}
		msgs = append(msgs, m)
		if next[k]++; next[k] == perKey {
			open[i] = open[len(open)-1]
			open = open[:len(open)-1]
		}
	}
	if err := tr.Publisher().Publish(topic, msgs...); err != nil {
		t.Fatal(err)
	}
	return sent
}

// keyHistory is every delivery of a test's messages, per key in the
// order the handlers got them, across the members of a group.
type keyHistory struct {
	mu         sync.Mutex
	seqs       map[string][]int
	seen       map[string]bool // by UUID
	handled    int
	violations []string // two messages of a key out at once in a member
}

func newKeyHistory() *keyHistory {
	return &keyHistory{seqs: map[string][]int{}, seen: map[string]bool{}}
}

// historyMember is a member of a group whose handlers record each
// delivery in a keyHistory, then take 0–2 ms, then ack. Once crashed, its
// handlers record and ack nothing more, and it is closed.
type historyMember struct {
	h       *keyHistory
	ch      <-chan *message.Message
	s       *subscriber
	started chan struct{}

	// guarded by h.mu
	out, peak int
	outIDs    map[string]bool
	keysOut   map[string]int // key: sequence number out
	handled   map[string]bool
	crashAt   int // the delivery count at which to crash; 0: never
	crashed   bool
	onCrash   chan map[string]bool
}

// member subscribes a member of handler's group to topic with inFlight
// messages in flight. It reads nothing until start.
func (h *keyHistory) member(t *testing.T, cfg Config, handler, topic string, inFlight int) *historyMember {
	t.Helper()
	s, err := newSubscriber(cfg, handler, inFlight, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ch, err := s.Subscribe(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	m := &historyMember{h: h, ch: ch, s: s.(*subscriber), started: make(chan struct{}),
		outIDs: map[string]bool{}, keysOut: map[string]int{}, handled: map[string]bool{}}
	go func() {
		<-m.started
		for msg := range ch {
			go m.handle(msg)
		}
	}()
	return m
}

func (m *historyMember) start() { close(m.started) }

// crashAfter makes the member crash as it takes its nth delivery; the
// channel returned then receives the UUIDs of the messages it had out,
// that nth included.
func (m *historyMember) crashAfter(n int) <-chan map[string]bool {
	m.h.mu.Lock()
	defer m.h.mu.Unlock()
	m.crashAt, m.onCrash = n, make(chan map[string]bool, 1)
	return m.onCrash
}

func (m *historyMember) handle(msg *message.Message) {
	if !m.record(msg) {
		return
	}
	time.Sleep(time.Duration(rand.IntN(2001)) * time.Microsecond)
	m.h.mu.Lock()
	defer m.h.mu.Unlock()
	if m.crashed {
		return
	}
	m.out--
	delete(m.outIDs, msg.UUID)
	delete(m.keysOut, msg.Metadata.Get(transporttest.KeyMetadata))
	msg.Ack()
}

// record adds a delivery to the history and reports whether the member
// is to handle it.
func (m *historyMember) record(msg *message.Message) bool {
	h := m.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if m.crashed {
		return false
	}
	key := msg.Metadata.Get(transporttest.KeyMetadata)
	seq, err := strconv.Atoi(string(msg.Payload))
	if err != nil {
		panic(fmt.Sprintf("payload %q: %v", msg.Payload, err))
	}
	if prev, ok := m.keysOut[key]; ok {
		h.violations = append(h.violations, fmt.Sprintf("%s %d handed out while %d was out", key, seq, prev))
	}
	m.keysOut[key] = seq
	h.seqs[key] = append(h.seqs[key], seq)
	h.seen[msg.UUID] = true
	h.handled++
	m.handled[msg.UUID] = true
	m.out++
	m.peak = max(m.peak, m.out)
	m.outIDs[msg.UUID] = true
	if m.crashAt > 0 && h.handled >= m.crashAt {
		m.crashed = true
		out := make(map[string]bool, len(m.outIDs))
		for id := range m.outIDs {
			out[id] = true
		}
		m.onCrash <- out
		go func() { _ = m.s.Close() }()
		return false
	}
	return true
}

func (m *historyMember) peakOut() int {
	m.h.mu.Lock()
	defer m.h.mu.Unlock()
	return m.peak
}

// handledAll reports whether the member got each of ids.
func (m *historyMember) handledAll(ids map[string]bool) bool {
	m.h.mu.Lock()
	defer m.h.mu.Unlock()
	for id := range ids {
		if !m.handled[id] {
			return false
		}
	}
	return true
}

func (h *keyHistory) deliveries() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.handled
}

// waitAll waits until every message of sent was delivered.
func (h *keyHistory) waitAll(t *testing.T, sent map[string]delivery) {
	t.Helper()
	transporttest.WaitFor(t, fmt.Sprintf("the %d messages delivered", len(sent)), func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.seen) >= len(sent)
	})
}

// checkOrder checks that no member had two messages of a key out at
// once, and each key's deliveries s₁, s₂, … (sequence numbers
// 0 to perKey-1, in publish order): s₁ = 0, and each next one is either
// the one after its predecessor (sᵢ = sᵢ₋₁ + 1) or, when redeliveries
// are allowed, a step back (sᵢ ≤ sᵢ₋₁): a redelivery that replays, in
// order, from a message the key saw before. Never a skip. Together this
// says that a key's first deliveries come in publish order and a
// redelivery repeats only a stretch already seen. Every sequence number
// must come.
func (h *keyHistory) checkOrder(t *testing.T, perKey int, redeliveries bool) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.violations) > 0 {
		t.Fatalf("%d messages handed out before their key's previous one was acked, the first: %s",
			len(h.violations), h.violations[0])
	}
	for key, seqs := range h.seqs {
		last, top := -1, -1
		for i, s := range seqs {
			switch {
			case s == last+1:
			case redeliveries && s <= last:
			default:
				t.Fatalf("%s delivered %v: %d at delivery %d after %d", key, seqs, s, i+1, last)
			}
			last, top = s, max(top, s)
		}
		if top != perKey-1 {
			t.Fatalf("%s delivered %v, want up to %d", key, seqs, perKey-1)
		}
	}
}

// BenchmarkKafkaSubscriber measures a subscriber's throughput over 4
// partitions with handlers that take 1 ms, with 1 message in flight (one
// per partition) and with 32, from its first message on (the group's join
// is not counted). Run it with -benchtime=5000x or more.
func BenchmarkKafkaSubscriber(b *testing.B) {
	prefix, service := testenv.Names()
	cfg := Config{Brokers: brokerenv.Kafka(b), Partitions: 4, TopicPrefix: prefix, ServiceName: service,
		KeyMetadata: transporttest.KeyMetadata}
	for _, inFlight := range []int{1, 32} {
		b.Run(fmt.Sprintf("inFlight=%d", inFlight), func(b *testing.B) {
			topic := fmt.Sprintf("bench-%d-%d", inFlight, b.N)
			cfg := cfg
			cfg.Topics = []string{topic}
			tr, err := New(b.Context(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = tr.Close() })
			msgs := make([]*message.Message, b.N)
			for i := range msgs {
				msgs[i] = message.NewMessage(watermill.NewUUID(), []byte("{}"))
				msgs[i].Metadata.Set(transporttest.KeyMetadata, fmt.Sprintf("key-%d", i%1000))
			}
			if err := tr.Publisher().Publish(topic, msgs...); err != nil {
				b.Fatal(err)
			}
			s, err := newSubscriber(cfg, topic, inFlight, watermill.NopLogger{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ch, err := s.Subscribe(b.Context(), prefix+topic)
			if err != nil {
				b.Fatal(err)
			}
			var wg sync.WaitGroup
			for i := range b.N {
				m := <-ch
				if i == 0 { // the group joined: the clock starts
					b.ResetTimer()
				}
				wg.Go(func() {
					time.Sleep(time.Millisecond)
					m.Ack()
				})
			}
			wg.Wait()
			b.StopTimer() // Close waits out sarama's fetch (up to 500 ms)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msg/s")
		})
	}
}
