package redisstream

import (
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wmredisstream "github.com/ThreeDotsLabs/watermill-redisstream/pkg/redisstream"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/transport/broker"
	"github.com/onceflow/onceflow/transport/transporttest"
)

// The transport on the shared Redis: what it keeps of a message, the work
// of a handler split between replicas while every handler gets every
// message, redelivery of a nacked message, delivery of what was published
// before the group existed, entries from producers outside Watermill, the
// in-flight count, and Close.
func TestRedisStreamTransport(t *testing.T) {
	cfg, client := testConfig(t, "redis://"+testenv.RedisAddr()+"/0")
	tr := newTestTransport(t, cfg)

	t.Run("the UUID and every metadata entry cross the broker", func(t *testing.T) {
		ch := transporttest.Subscribe(t, tr, "roundtrip", "roundtrip")
		m := message.NewMessage(watermill.NewUUID(), []byte(`{"n":1}`))
		m.Metadata = message.Metadata{transporttest.KeyMetadata: "pay-1", "traceparent": "00-abc-01", "empty": ""}
		if err := tr.Publisher().Publish("roundtrip", m); err != nil {
			t.Fatal(err)
		}
		got := transporttest.Receive(t, ch, 1)[0]
		if got.UUID != m.UUID || string(got.Payload) != string(m.Payload) || len(got.Metadata) != len(m.Metadata) {
			t.Fatalf("got %s %q %v, want %s %q %v", got.UUID, got.Payload, got.Metadata, m.UUID, m.Payload, m.Metadata)
		}
		for k, v := range m.Metadata {
			if got.Metadata.Get(k) != v {
				t.Errorf("metadata %s = %q, want %q", k, got.Metadata.Get(k), v)
			}
		}
	})

	t.Run("replicas split a handler's work, every handler gets every message", func(t *testing.T) {
		replicas := []<-chan *message.Message{
			transporttest.Subscribe(t, tr, "r", "shared"), transporttest.Subscribe(t, newTestTransport(t, cfg), "r", "shared"),
		}
		other := transporttest.Subscribe(t, tr, "other", "shared")
		sent := transporttest.PublishN(t, tr, "shared", 20)
		transporttest.CheckReplicasShare(t, replicas, sent, 10*time.Millisecond) // a handler's work, so both replicas get some
		if all := transporttest.UUIDs(transporttest.Receive(t, other, len(sent))); len(all) != len(sent) {
			t.Errorf("the other handler got %d distinct messages, want %d", len(all), len(sent))
		}
	})

	t.Run("a nacked message is redelivered", func(t *testing.T) { transporttest.CheckNackRedelivered(t, tr, "nack") })

	t.Run("a message published before its group exists is delivered", func(t *testing.T) { transporttest.CheckEarlyDelivered(t, tr, "early") })

	t.Run("an entry the marshaller cannot read is delivered and the subscription goes on", func(t *testing.T) {
		ch := transporttest.Subscribe(t, tr, "foreign", "foreign")
		stream := cfg.TopicPrefix + "foreign"
		for _, values := range []map[string]any{
			{"payload": "no uuid"},
			{wmredisstream.UUIDHeaderKey: "u-1", "payload": "bad metadata", "metadata": "not msgpack"},
		} {
			if err := client.XAdd(t.Context(), &redis.XAddArgs{Stream: stream, Values: values}).Err(); err != nil {
				t.Fatal(err)
			}
		}
		sent := transporttest.PublishN(t, tr, "foreign", 1)
		got := transporttest.Receive(t, ch, 3)
		if string(got[0].Payload) != "no uuid" || got[0].UUID == "" || got[0].Metadata.Get(UnreadableEntryMetadata) == "" {
			t.Errorf("entry without a UUID: got %s %q %v", got[0].UUID, got[0].Payload, got[0].Metadata)
		}
		if got[0].UUID != entryUUID(map[string]any{"payload": "no uuid"}) {
			t.Errorf("entry without a UUID got UUID %s, want one derived from its fields", got[0].UUID)
		}
		if got[1].UUID != "u-1" || string(got[1].Payload) != "bad metadata" || got[1].Metadata.Get(UnreadableEntryMetadata) == "" {
			t.Errorf("entry with unreadable metadata: got %s %q %v", got[1].UUID, got[1].Payload, got[1].Metadata)
		}
		if _, ok := sent[got[2].UUID]; !ok {
			t.Errorf("third delivery %s is not the message published after the foreign entries", got[2].UUID)
		}
	})

	t.Run("trimming is off by default", func(t *testing.T) {
		transporttest.PublishN(t, tr, "untrimmed", 5)
		if n := client.XLen(t.Context(), cfg.TopicPrefix+"untrimmed").Val(); n != 5 {
			t.Errorf("stream holds %d entries, want the 5 published", n)
		}
	})

	t.Run("readiness", func(t *testing.T) {
		if err := tr.Readiness()(t.Context()); err != nil {
			t.Errorf("readiness on a Redis that answers: %v", err)
		}
	})

	t.Run("a handler holds its in-flight count at once", func(t *testing.T) { transporttest.CheckInFlight(t, tr, "lanes", 8, 3*8) })

	t.Run("a subscription reads no more than its in-flight count", func(t *testing.T) {
		const n = 4
		ch := transporttest.SubscribeN(t, tr, "bounded", "bounded", n)
		transporttest.PublishN(t, tr, "bounded", 3*n)
		transporttest.Receive(t, ch, n, transporttest.Hold)
		time.Sleep(200 * time.Millisecond) // an entry read ahead would be pending now
		if got := client.XPending(t.Context(), cfg.TopicPrefix+"bounded", cfg.names().ConsumerGroup("bounded")).Val().Count; got != n {
			t.Errorf("%d entries pending with %d handed out and none settled, want %d", got, n, n)
		}
	})

	t.Run("a closed subscriber hands back what it held", func(t *testing.T) {
		// The entries come back at once, released as the subscription
		// ends; one whose release failed would come back at the next
		// claim after the ack deadline: short here, so that the check is
		// that nothing is lost or acked twice.
		cfg, _ := testConfig(t, "redis://"+testenv.RedisAddr()+"/0")
		cfg.AckDeadline = 2 * time.Second
		transporttest.CheckCloseHandsBack(t, newTestTransport(t, cfg), "handback", 8)
	})

	t.Run("close ends every subscription and the publisher", func(t *testing.T) {
		transporttest.CheckCloseEnds(t, transporttest.OpenerOf(New, cfg), "closing")
	})
}

// MaxLen, when set, trims the oldest entries, read or not.
func TestRedisStreamMaxLen(t *testing.T) {
	cfg, client := testConfig(t, "redis://"+testenv.RedisAddr()+"/0")
	cfg.MaxLen = 10
	tr := newTestTransport(t, cfg)
	transporttest.PublishN(t, tr, "capped", 1) // a stream key of its own
	for range 30 {
		transporttest.PublishN(t, tr, "capped", 10)
	}
	// MAXLEN ~ trims whole macro nodes (100 entries by default) only.
	if n := client.XLen(t.Context(), cfg.TopicPrefix+"capped").Val(); n >= 301 {
		t.Errorf("stream holds %d entries, want it trimmed", n)
	}
}

// testConfig is the Redis Streams transport on url with names
// of its own, whose streams are deleted when t ends, and a client of url.
func testConfig(t *testing.T, url string) (Config, *redis.Client) {
	t.Helper()
	testenv.Integration(t)
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	if err := client.Ping(t.Context()).Err(); err != nil {
		testenv.Unreachable(t, "Redis", opts.Addr, err)
	}
	prefix, service := testenv.Names()
	testenv.DeleteRedisKeysOnCleanup(t, client, prefix)
	return Config{URL: url, TopicPrefix: prefix, ServiceName: service,
		Redelivery: broker.Redelivery{ResendInterval: 50 * time.Millisecond}}, client
}

// hasNo fails t if s contains secret.
func hasNo(t *testing.T, s, secret string) {
	t.Helper()
	if strings.Contains(s, secret) {
		t.Errorf("%q shows %q", s, secret)
	}
}

// The Redis Streams transport needs a URL and a stream cap of zero or
// more.
func TestRedisStreamConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{ServiceName: "s"}, "redisstream: missing URL"},
		{Config{ServiceName: "s", URL: "redis://r", MaxLen: -1},
			"redisstream: stream length cap -1, want zero (no trimming) or more"},
	} {
		if err := c.cfg.Validate(); err == nil || err.Error() != c.want {
			t.Errorf("Validate() = %v, want %q", err, c.want)
		}
	}
	if err := (Config{ServiceName: "s", URL: "redis://r"}).Validate(); err != nil {
		t.Errorf("Validate() = %v for a URL and the defaults", err)
	}
}

// newTestTransport is New(cfg), closed when the test ends.
func newTestTransport(t *testing.T, cfg Config) *broker.Transport {
	t.Helper()
	return transporttest.Open(t, New, cfg)
}
