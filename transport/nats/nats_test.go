package nats

import (
	"context"
	"fmt"
	"maps"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
	"github.com/onceflow/onceflow/transport/broker"
	"github.com/onceflow/onceflow/transport/transporttest"
)

// The transport on its own against the shared server: what goes through
// it comes out the same, every handler gets every message, replicas share
// one, nacks and copies, and close.
func TestNATSTransport(t *testing.T) {
	cfg := testConfig(t, brokerenv.NATS(t), "roundtrip", "fanout", "shared", "nack", "early", "dedup", "lanes", "handback")
	tr := newTestTransport(t, cfg)

	t.Run("a message keeps its UUID, payload and metadata", func(t *testing.T) {
		ch := transporttest.Subscribe(t, tr, "rt", "roundtrip")
		sent := message.NewMessage(watermill.NewUUID(), []byte(`{"n":1}`))
		sent.Metadata.Set(transporttest.KeyMetadata, "key-rt")
		sent.Metadata.Set("trace_id", "abc, def")
		sent.Metadata.Set("Mixed-Case", "kept")
		if err := tr.Publisher().Publish("roundtrip", sent); err != nil {
			t.Fatal(err)
		}
		got := transporttest.Receive(t, ch, 1)[0]
		if got.UUID != sent.UUID || string(got.Payload) != string(sent.Payload) || !maps.Equal(got.Metadata, sent.Metadata) {
			t.Errorf("got %s %q %v, want %s %q %v", got.UUID, got.Payload, got.Metadata, sent.UUID, sent.Payload, sent.Metadata)
		}
	})

	t.Run("every handler gets every message", func(t *testing.T) {
		a, b := transporttest.Subscribe(t, tr, "a", "fanout"), transporttest.Subscribe(t, tr, "b", "fanout")
		sent := transporttest.PublishN(t, tr, "fanout", 10)
		for name, ch := range map[string]<-chan *message.Message{"a": a, "b": b} {
			if got := transporttest.UUIDs(transporttest.Receive(t, ch, len(sent))); !maps.EqualFunc(got, sent, func(bool, *message.Message) bool { return true }) {
				t.Errorf("handler %s got %d distinct messages, not the %d sent", name, len(got), len(sent))
			}
		}
	})

	t.Run("replicas share a handler's consumer", func(t *testing.T) {
		// Each Subscribe returns once the server has its subscription:
		// what is published next may go to either replica.
		replicas := []<-chan *message.Message{
			transporttest.Subscribe(t, tr, "r", "shared"), transporttest.Subscribe(t, newTestTransport(t, cfg), "r", "shared"),
		}
		transporttest.CheckReplicasShare(t, replicas, transporttest.PublishN(t, tr, "shared", 20), 0)
	})

	t.Run("a nacked message is redelivered", func(t *testing.T) { transporttest.CheckNackRedelivered(t, tr, "nack") })

	t.Run("a message published before its consumer exists is delivered", func(t *testing.T) { transporttest.CheckEarlyDelivered(t, tr, "early") })

	t.Run("the stream drops a copy of the same key", func(t *testing.T) {
		msg := func(key string) *message.Message {
			m := message.NewMessage(watermill.NewUUID(), []byte(key))
			m.Metadata.Set(transporttest.KeyMetadata, key)
			return m
		}
		first, copyOfFirst, other := msg("k1"), msg("k1"), msg("k2")
		for _, m := range []*message.Message{first, copyOfFirst, other} {
			if err := tr.Publisher().Publish("dedup", m); err != nil {
				t.Fatalf("publishing %s: %v, want a copy acked as a duplicate, not an error", m.UUID, err)
			}
		}
		ch := transporttest.Subscribe(t, tr, "d", "dedup")
		got := transporttest.UUIDs(transporttest.Receive(t, ch, 2))
		if !got[first.UUID] || !got[other.UUID] {
			t.Errorf("got %v, want %s (k1) and %s (k2)", got, first.UUID, other.UUID)
		}
		select {
		case m := <-ch:
			m.Ack()
			t.Errorf("got %s (%s) too, want the copy of k1 dropped", m.UUID, m.Payload)
		case <-time.After(500 * time.Millisecond):
		}
		if n := brokerenv.NATSStreamMessages(t, cfg.URL, broker.NATSStream(cfg.TopicPrefix+"dedup")); n != 2 {
			t.Errorf("stream holds %d messages, want 2", n)
		}
	})

	t.Run("ready", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := tr.Readiness()(ctx); err != nil {
			t.Error(err)
		}
	})

	t.Run("a handler holds its in-flight count at once", func(t *testing.T) { transporttest.CheckInFlight(t, tr, "lanes", 8, 9) })

	t.Run("a closed subscriber hands back what it held", func(t *testing.T) { transporttest.CheckCloseHandsBack(t, tr, "handback", 8) })

	t.Run("the consumer lets every lane of a few replicas hold a message", func(t *testing.T) {
		transporttest.SubscribeN(t, tr, "wide", "lanes", 40)
		if got, want := consumerOf(t, cfg, "lanes", "wide").MaxAckPending, 4*40; got != want {
			t.Errorf("MaxAckPending = %d, want %d for 40 in flight", got, want)
		}
	})

	t.Run("close ends every subscription and the publisher", func(t *testing.T) {
		transporttest.CheckCloseEnds(t, transporttest.OpenerOf(New, cfg), "fanout")
	})
}

// A subscription that ends hands back at once every message it held,
// also those its handler had just nacked, which the server redelivers
// after the resend interval: one redelivered to the subscription as it
// unsubscribed would be in flight to nobody, back only after the ack wait
// (30 s). Each round ends a subscription at another time after the nacks.
func TestNATSEndHandsBackAtOnce(t *testing.T) {
	cfg := testConfig(t, brokerenv.NATS(t))
	tr := newTestTransport(t, cfg)
	const inFlight = 16
	for round := range 10 {
		topic := fmt.Sprintf("end-%d", round)
		sub, err := tr.Subscriber(topic, inFlight)
		if err != nil {
			t.Fatal(err)
		}
		sent := transporttest.PublishN(t, tr, topic, 2*inFlight)
		ctx, cancel := context.WithCancel(t.Context())
		ch, err := sub.Subscribe(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		held := transporttest.Receive(t, ch, inFlight, transporttest.Hold)
		for _, m := range held[:inFlight/2] {
			m.Nack()
		}
		time.Sleep(time.Duration(round) * cfg.ResendInterval / 5)
		cancel()
		transporttest.NackUntilClosed(t, ch)
		start := time.Now()
		got := transporttest.UUIDs(transporttest.Receive(t, transporttest.SubscribeN(t, tr, topic, topic, inFlight), len(sent)))
		if took := time.Since(start); len(got) != len(sent) || took > 5*time.Second {
			t.Errorf("round %d: %d of the %d messages back in %v, want all at once", round, len(got), len(sent), took)
		}
	}
}

// A replica that dies holding a message, unacked — its connections cut,
// as a killed process's are — has it redelivered to the survivor once the
// ack wait passed.
func TestNATSCrashedConsumer(t *testing.T) {
	cfg := testConfig(t, brokerenv.NATS(t), topicRequested)
	cfg.AckDeadline = 2 * time.Second
	survivor := newTestTransport(t, cfg)

	crash := &transporttest.CutDialer{}
	doomed, err := newWith(t.Context(), cfg, nats.SetCustomDialer(crash))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = doomed.Close() }) // its connections are cut: errors are expected
	held := transporttest.Subscribe(t, doomed, "crash", topicRequested)
	sent := transporttest.PublishN(t, survivor, topicRequested, 1)
	m := transporttest.Receive(t, held, 1, func(*message.Message) bool { return true })[0] // neither acked nor nacked

	rescue := transporttest.Subscribe(t, survivor, "crash", topicRequested)
	crash.Cut()
	cut := time.Now()
	again := transporttest.Receive(t, rescue, 1)[0]
	took := time.Since(cut)
	if _, ok := sent[m.UUID]; !ok || again.UUID != m.UUID {
		t.Fatalf("the doomed replica held %s, the survivor got %s, want the sent message", m.UUID, again.UUID)
	}
	if took > cfg.AckDeadline+3*time.Second {
		t.Errorf("redelivered %v after the crash, want about the ack wait (%v)", took, cfg.AckDeadline)
	}
	t.Logf("redelivered to the survivor %v after the crash (ack wait %v)", took.Round(10*time.Millisecond), cfg.AckDeadline)
}

// A server of the test's own, its JetStream store on disk, killed and
// started again: readiness fails while it is down and recovers, the
// subscriber reconnects by itself, and every message published before and
// after is delivered — also to a handler that subscribes only after.
func TestNATSServerRestart(t *testing.T) {
	srv := brokerenv.NATSServer(t)
	cfg := testConfig(t, srv.URL(), topicRequested)
	cfg.AckDeadline = 3 * time.Second
	tr := newTestTransport(t, cfg)
	ready := func() error {
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		return tr.Readiness()(ctx)
	}
	ch := transporttest.Subscribe(t, tr, "h", topicRequested)
	before := transporttest.PublishN(t, tr, topicRequested, 3)
	transporttest.Receive(t, ch, len(before))

	srv.Stop()
	if err := ready(); err == nil {
		t.Error("ready while the server is down")
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	transporttest.WaitFor(t, "readiness to recover", func() bool { return ready() == nil })
	recovered := time.Since(restarted)
	after := transporttest.PublishN(t, tr, topicRequested, 3)
	receiveAll(t, ch, after, 2*cfg.AckDeadline+10*time.Second)
	t.Logf("ready %v after the restart, the messages published then delivered %v after it",
		recovered.Round(10*time.Millisecond), time.Since(restarted).Round(10*time.Millisecond))
	receiveAll(t, transporttest.Subscribe(t, tr, "late", topicRequested), joined(before, after), 10*time.Second)
}

// receiveAll acks what ch delivers until it delivered every message of
// want, redeliveries aside, failing the test after limit. After a restart
// redeliveries are expected: a killed server loses acks it had not yet
// written, and an ack in flight when it went down is lost.
func receiveAll(t *testing.T, ch <-chan *message.Message, want map[string]*message.Message, limit time.Duration) {
	t.Helper()
	timeout := time.After(limit)
	seen := map[string]bool{}
	for len(seen) < len(want) {
		select {
		case m := <-ch:
			m.Ack()
			if _, ok := want[m.UUID]; ok {
				seen[m.UUID] = true
			}
		case <-timeout:
			t.Fatalf("received %d of %d messages within %v", len(seen), len(want), limit)
		}
	}
}

func joined(a, b map[string]*message.Message) map[string]*message.Message {
	all := maps.Clone(a)
	maps.Copy(all, b)
	return all
}

// A service redeployed with another ack deadline brings its durable
// consumers to it: a subscription binds to an existing consumer by name
// and would otherwise keep the consumer's old ack wait.
func TestNATSAckDeadlineChange(t *testing.T) {
	cfg := testConfig(t, brokerenv.NATS(t), topicRequested)
	cfg.AckDeadline = 30 * time.Second
	first, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	transporttest.Subscribe(t, first, "h", topicRequested)
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	cfg.AckDeadline = 10 * time.Second
	tr := newTestTransport(t, cfg)
	ch := transporttest.Subscribe(t, tr, "h", topicRequested)
	transporttest.Receive(t, ch, len(transporttest.PublishN(t, tr, topicRequested, 1)))
	if got := consumerOf(t, cfg, topicRequested, "h").AckWait; got != cfg.AckDeadline {
		t.Errorf("consumer's ack wait = %v, want the new deadline %v", got, cfg.AckDeadline)
	}
}

// consumerOf is the configuration of handler's durable consumer on
// topic.
func consumerOf(t *testing.T, cfg Config, topic, handler string) nats.ConsumerConfig {
	t.Helper()
	nc, err := nats.Connect(cfg.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := nc.JetStream()
	info, err := js.ConsumerInfo(broker.NATSStream(cfg.TopicPrefix+topic), cfg.names().NATSDurable(handler))
	if err != nil {
		t.Fatal(err)
	}
	return info.Config
}

// Start-up against a server that cannot be used fails within a bound, in
// one line saying what failed.
func TestNATSStartupUnreachable(t *testing.T) {
	testenv.Integration(t)
	silent, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = silent.Close() })
	for name, c := range map[string]struct {
		addr   string
		within time.Duration
	}{
		"nothing listening": {testenv.ClosedAddr(t), time.Second},
		"no answer":         {silent.Addr().String(), dialTimeout + 2*time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			tr, err := New(t.Context(), Config{URL: "nats://" + c.addr, ServiceName: "onceflow"})
			took := time.Since(start)
			if err == nil {
				_ = tr.Close()
				t.Fatal("New succeeded without a NATS server")
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "connecting to NATS: ") || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line saying what failed", msg)
			}
			if took > c.within {
				t.Errorf("New failed after %v, want within %v", took, c.within)
			}
			t.Logf("failed after %v: %v", took.Round(time.Millisecond), err)
		})
	}
}

// testConfig is a NATS transport on url with names of the test's own,
// creating topics at start-up; its streams are deleted when t ends.
func testConfig(t *testing.T, url string, topics ...string) Config {
	t.Helper()
	prefix, service := testenv.Names()
	brokerenv.DeleteNATSStreamsOnCleanup(t, url, broker.NATSStream(prefix))
	return Config{URL: url, TopicPrefix: prefix, ServiceName: service, Topics: topics,
		Redelivery: broker.Redelivery{ResendInterval: 100 * time.Millisecond}, KeyMetadata: transporttest.KeyMetadata}
}

// topicRequested is a topic of the service, as the tests use it.
const topicRequested = transporttest.TopicRequested

// newTestTransport is New(cfg), closed when the test ends.
func newTestTransport(t *testing.T, cfg Config) *broker.Transport {
	t.Helper()
	return transporttest.Open(t, New, cfg)
}
