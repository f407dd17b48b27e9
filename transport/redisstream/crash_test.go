package redisstream

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/transport/transporttest"
)

// An entry that a consumer read and never acked is delivered to another
// consumer of its group once it has been pending for the ack deadline, and
// not before: a crashed consumer's entry is taken over, an entry still
// being handled is not.
func TestRedisStreamClaim(t *testing.T) {
	t.Parallel() // seconds of waiting: overlap the other tests
	const deadline = 2 * time.Second
	cfg, client := testConfig(t, "redis://"+testenv.RedisAddr()+"/0")
	cfg.AckDeadline = deadline
	claimInterval := subscriptionConfig(cfg).ClaimInterval
	tr := newTestTransport(t, cfg)

	t.Run("a crashed consumer's entry", func(t *testing.T) {
		t.Parallel()
		stream, group := cfg.TopicPrefix+"crash", cfg.names().ConsumerGroup("h")
		if err := client.XGroupCreateMkStream(t.Context(), stream, group, "0").Err(); err != nil {
			t.Fatal(err)
		}
		sent := transporttest.PublishN(t, tr, "crash", 1)
		// A consumer reads the entry and its process dies: nothing acks it.
		read, err := client.XReadGroup(t.Context(), &redis.XReadGroupArgs{
			Group: group, Consumer: "crashed-" + watermill.NewShortUUID(), Streams: []string{stream, ">"}, Count: 1}).Result()
		if err != nil || len(read) != 1 || len(read[0].Messages) != 1 {
			t.Fatalf("the doomed consumer read %v, %v; want the entry", read, err)
		}
		crashed := time.Now()

		got := transporttest.Receive(t, transporttest.Subscribe(t, tr, "h", "crash"), 1)[0]
		took := time.Since(crashed)
		if _, ok := sent[got.UUID]; !ok {
			t.Fatalf("the survivor got %s, not the entry", got.UUID)
		}
		if took < deadline || took > deadline+claimInterval+3*time.Second {
			t.Errorf("claimed %v after the crash, want between the ack deadline %v and %v later", took, deadline, claimInterval)
		}
		t.Logf("claimed %v after the crash", took.Round(10*time.Millisecond))
		transporttest.WaitFor(t, "the claimed entry acked", func() bool {
			return client.XPending(t.Context(), stream, group).Val().Count == 0
		})
	})

	t.Run("an entry still being handled", func(t *testing.T) {
		t.Parallel()
		holder := transporttest.Subscribe(t, tr, "h", "busy")
		other := transporttest.Subscribe(t, newTestTransport(t, cfg), "h", "busy")
		sent := transporttest.PublishN(t, tr, "busy", 1)
		var m *message.Message
		select {
		case m = <-holder:
		case m = <-other:
			holder, other = other, holder
		case <-time.After(10 * time.Second):
			t.Fatal("no delivery in 10s")
		}
		if _, ok := sent[m.UUID]; !ok {
			t.Fatalf("got %s, not the entry", m.UUID)
		}
		select { // the handler works for three quarters of the deadline
		case again := <-other:
			t.Fatalf("the other consumer got %s while the first was handling it", again.UUID)
		case <-time.After(deadline * 3 / 4):
		}
		m.Ack()
		select {
		case again := <-other:
			t.Errorf("the other consumer got %s after the first acked it", again.UUID)
		case again := <-holder:
			t.Errorf("the first consumer got %s again after acking it", again.UUID)
		case <-time.After(deadline/2 + claimInterval):
		}
	})
}

// The entries a subscriber read and did not ack before it was closed —
// the one its handler had — go to another consumer of the group well
// before the ack deadline: a replica stopped for a rolling deployment
// holds nothing back.
func TestRedisStreamCloseReleasesEntries(t *testing.T) {
	t.Parallel() // seconds of waiting: overlap the other tests
	const deadline = 8 * time.Second
	cfg, client := testConfig(t, "redis://"+testenv.RedisAddr()+"/0")
	cfg.AckDeadline = deadline
	stream, group := cfg.TopicPrefix+"release", cfg.names().ConsumerGroup("h")
	closing, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = closing.Close() })
	held := transporttest.Subscribe(t, closing, "h", "release")
	sent := transporttest.PublishN(t, closing, "release", 5)
	transporttest.Receive(t, held, 1, func(*message.Message) bool { return true }) // and never acked
	transporttest.WaitFor(t, "the entry held", func() bool { return client.XPending(t.Context(), stream, group).Val().Count >= 1 })
	holding := client.XPending(t.Context(), stream, group).Val().Count
	survivor := transporttest.Subscribe(t, newTestTransport(t, cfg), "h", "release")

	if err := closing.Close(); err != nil {
		t.Fatal(err)
	}
	closed := time.Now()
	got := transporttest.UUIDs(transporttest.Receive(t, survivor, len(sent)))
	took := time.Since(closed)
	if len(got) != len(sent) {
		t.Errorf("the survivor got %d distinct messages, want the %d sent", len(got), len(sent))
	}
	if took >= deadline-time.Second {
		t.Errorf("the survivor had every message %v after the close, want well before the ack deadline %v", took, deadline)
	}
	t.Logf("the closed subscriber held %d entries; the survivor had every message %v after the close", holding, took.Round(10*time.Millisecond))
}

// A subscription whose context ends hands back, as a closed subscriber
// does, the entries it read and did not ack: the next subscription, here
// of the same subscriber, gets them well before the ack deadline.
func TestRedisStreamContextEndReleasesEntries(t *testing.T) {
	t.Parallel() // seconds of waiting: overlap the other tests
	const deadline = 8 * time.Second
	cfg, client := testConfig(t, "redis://"+testenv.RedisAddr()+"/0")
	cfg.AckDeadline = deadline
	stream, group := cfg.TopicPrefix+"release", cfg.names().ConsumerGroup("h")
	tr := newTestTransport(t, cfg)
	sub, err := tr.Subscriber("h", 2)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	held, err := sub.Subscribe(ctx, "release")
	if err != nil {
		t.Fatal(err)
	}
	sent := transporttest.PublishN(t, tr, "release", 8)
	transporttest.Receive(t, held, 2, transporttest.Hold) // and never acked
	transporttest.WaitFor(t, "the entries held", func() bool { return client.XPending(t.Context(), stream, group).Val().Count >= 2 })
	holding := client.XPending(t.Context(), stream, group).Val().Count

	cancel()
	transporttest.NackUntilClosed(t, held)
	ended := time.Now()
	got := transporttest.UUIDs(transporttest.Receive(t, transporttest.SubscribeN(t, tr, "h", "release", 2), len(sent)))
	took := time.Since(ended)
	if len(got) != len(sent) {
		t.Errorf("the next subscription got %d distinct messages, want the %d sent", len(got), len(sent))
	}
	if took >= deadline-time.Second {
		t.Errorf("the next subscription had every message %v after the end, want well before the ack deadline %v", took, deadline)
	}
	t.Logf("the ended subscription held %d entries; the next had every message %v after the end", holding, took.Round(10*time.Millisecond))
}

// A Redis with an append-only file restarts: while it is down readiness
// fails and publishing fails; once it is back, both recover by themselves,
// and the subscriber delivers every message published before and after.
// A Redis without persistence loses its streams and groups as it restarts:
// the subscriber creates its group again and delivers what is published
// after.
func TestRedisStreamRestart(t *testing.T) {
	t.Parallel() // seconds of waiting: overlap the other tests
	for name, persist := range map[string]bool{"append-only": true, "no persistence": false} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			args := []string{"--save", ""}
			if persist {
				// Every write is on disk before Redis answers: with the
				// default (a flush every second, later while a flush is
				// under way), a kill right after the publishes can lose
				// them and the stream with them.
				args = append(args, "--appendonly", "yes", "--appendfsync", "always")
			}
			server := testenv.RedisServer(t, args...)
			cfg, _ := testConfig(t, "redis://"+server.Addr()+"/0")
			// The kill can fall between Redis writing a read to its
			// append-only file and sending the answer: the entry is then
			// pending under this consumer, which never got it, and comes
			// back through a claim, an ack deadline later. A short
			// deadline keeps that within the wait below.
			cfg.AckDeadline = 2 * time.Second
			tr := newTestTransport(t, cfg)
			ch := transporttest.Subscribe(t, tr, "h", "restart")
			ready := func() error {
				ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
				defer cancel()
				return tr.Readiness()(ctx)
			}

			before := transporttest.PublishN(t, tr, "restart", 5)
			first := transporttest.Receive(t, ch, 1)
			server.Stop()
			if err := ready(); err == nil {
				t.Error("ready while Redis is down")
			}
			if err := tr.Publisher().Publish("restart", message.NewMessage(watermill.NewUUID(), nil)); err == nil {
				t.Error("publishing while Redis is down succeeded")
			}
			if err := server.Restart(); err != nil {
				t.Fatal(err)
			}
			transporttest.WaitFor(t, "ready again", func() bool { return ready() == nil })
			var after map[string]*message.Message
			transporttest.WaitFor(t, "publishing again", func() bool {
				m := message.NewMessage(watermill.NewUUID(), nil)
				if tr.Publisher().Publish("restart", m) != nil {
					return false
				}
				after = map[string]*message.Message{m.UUID: m}
				return true
			})

			want := after
			if persist {
				for id, m := range before {
					want[id] = m
				}
				delete(want, first[0].UUID)
			}
			got := map[string]bool{}
			timeout := time.After(15 * time.Second)
			for missing := len(want); missing > 0; {
				select {
				case m := <-ch:
					m.Ack()
					if _, ok := want[m.UUID]; ok && !got[m.UUID] {
						got[m.UUID] = true
						missing--
					}
				case <-timeout:
					t.Fatalf("got %d of the %d messages expected after the restart", len(got), len(want))
				}
			}
		})
	}
}

// Start-up fails at once, with one line that shows no password, when the
// URL does not parse or nothing answers at its address.
func TestRedisStreamStartup(t *testing.T) {
	testenv.Integration(t)
	for name, c := range map[string]struct{ url, want string }{
		"nothing listening": {"redis://:s3cret@" + testenv.ClosedAddr(t) + "/0", "no answer from Redis: "},
		"a malformed URL":   {"redis://:s3cret@127.0.0.1:port/0", "not a Redis URL: "},
		"another scheme":    {"http://:s3cret@127.0.0.1:6379/0", "not a Redis URL: "},
		"a bad database":    {"redis://:s3cret@127.0.0.1:6379/zero", "not a Redis URL: "},
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			tr, err := New(t.Context(), Config{URL: c.url, ServiceName: "onceflow"})
			took := time.Since(start)
			if err == nil {
				_ = tr.Close()
				t.Fatal("New succeeded")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, c.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line starting %q", msg, c.want)
			}
			hasNo(t, msg, "s3cret")
			if took > 2*time.Second {
				t.Errorf("New failed after %v, want at once", took)
			}
			t.Logf("failed after %v: %v", took.Round(time.Millisecond), err)
		})
	}

	t.Run("the context ends first", func(t *testing.T) {
		silent, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = silent.Close() })
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err = New(ctx, Config{URL: "redis://" + silent.Addr().String() + "/0", ServiceName: "onceflow"})
		took := time.Since(start)
		if err == nil || took > 2*time.Second {
			t.Errorf("New returned %v after %v, want an error soon after 300ms", err, took)
		}
		t.Logf("failed after %v: %v", took.Round(time.Millisecond), err)
	})
}

// A subscription that ends cuts its last read short (CLIENT UNBLOCK):
// Close returns at once, not after the read's block time. Where the ACL
// refuses CLIENT UNBLOCK, Close returns after the block time at most.
// Either way the entry the handler held is handed back.
func TestRedisStreamEndCutsRead(t *testing.T) {
	t.Parallel() // a server of its own
	server := testenv.RedisServer(t, "--save", "")
	admin := redis.NewClient(&redis.Options{Addr: server.Addr()})
	t.Cleanup(func() { _ = admin.Close() })
	err := admin.Do(t.Context(), "ACL", "SETUSER", "nounblock", "on", ">pw", "~*", "&*", "+@all", "-client|unblock").Err()
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		url    string
		within time.Duration
	}{
		"CLIENT UNBLOCK allowed": {"redis://" + server.Addr() + "/0", 300 * time.Millisecond},
		"CLIENT UNBLOCK refused": {"redis://nounblock:pw@" + server.Addr() + "/0", blockTime + 300*time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			cfg, client := testConfig(t, c.url)
			cfg.AckDeadline = time.Minute
			tr, err := New(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = tr.Close() })
			held := transporttest.SubscribeN(t, tr, "h", "cut", 2)
			transporttest.PublishN(t, tr, "cut", 1)
			transporttest.Receive(t, held, 1, transporttest.Hold) // and never acked
			time.Sleep(100 * time.Millisecond)                    // the reader blocks reading for the free slot

			start := time.Now()
			if err := tr.Close(); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took > c.within {
				t.Errorf("Close took %v, want at most %v", took, c.within)
			} else {
				t.Logf("Close took %v", took.Round(time.Millisecond))
			}
			pending, err := client.XPendingExt(t.Context(), &redis.XPendingExtArgs{
				Stream: cfg.TopicPrefix + "cut", Group: cfg.names().ConsumerGroup("h"), Start: "-", End: "+", Count: 10}).Result()
			if err != nil || len(pending) != 1 || pending[0].Idle < cfg.AckDeadline-time.Second {
				t.Errorf("pending after Close: %v, %v; want the entry held, released (idle for the ack deadline)", pending, err)
			}
		})
	}
}
