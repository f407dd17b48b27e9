package flow

import (
	"context"
	"testing"
	"time"

	"github.com/onceflow/onceflow/app"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
	"github.com/onceflow/onceflow/internal/testenv/redismeter"
	"github.com/onceflow/onceflow/stores/cache"
	redisstore "github.com/onceflow/onceflow/stores/redis"
)

// transportOptions are small rounds of kind on the services of the test
// environment.
func transportOptions(t testing.TB, kind string) TransportOptions {
	o := TransportOptions{Kind: kind, Redis: testenv.Redis(t), Messages: 300, Duplicates: 60, Partitions: 4, Consumers: 1}
	switch kind {
	case "kafka":
		o.KafkaBrokers = brokerenv.Kafka(t)
	case "amqp":
		o.AMQPURL = brokerenv.AMQP(t)
	case "sql":
		o.PostgresURL = testenv.PostgresURL()
		testenv.Postgres(t) // skips when PostgreSQL is unreachable
	case "nats":
		o.NATSURL = brokerenv.NATS(t)
	case "redisstream":
		testenv.Redis(t)
		o.RedisStreamURL = "redis://" + testenv.RedisAddr() + "/0"
	}
	return o
}

// openTransport opens a bench of o, closed when the test ends, and a
// context of a minute for its rounds.
func openTransport(t *testing.T, o TransportOptions) (context.Context, *TransportBench) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	b, err := NewTransportBench(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	return ctx, b
}

// TestTransportRoundsDeliverEveryMessage runs a round with the receiver on
// and one with it off on every transport: with it on, the handler runs
// exactly once per message and the copies are acked without running it;
// with it off, it runs once per delivery, copies included.
func TestTransportRoundsDeliverEveryMessage(t *testing.T) {
	for _, kind := range []string{"gochannel", "sql", "amqp", "kafka", "nats", "redisstream"} {
		t.Run(kind, func(t *testing.T) {
			testenv.Integration(t)
			o := transportOptions(t, kind)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			b, err := NewTransportBench(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := b.Close(); err != nil {
					t.Error(err)
				}
			}()
			_, copies := batch("x", o.Messages, o.Duplicates, copyLag(b.opts.InFlight*b.opts.Consumers))
			for _, receiver := range []bool{true, false} {
				tl, err := b.round(ctx, RoundOptions{Receiver: receiver}, b.opts.InFlight, nil)
				if err != nil {
					t.Fatalf("receiver %v: %v", receiver, err)
				}
				// The store is waited on only with the receiver on, and no
				// longer than the round lasted on all its lanes together:
				// the messages in flight at once, a partition's or a
				// subscriber's.
				wait, lanes := tl.storeWaitPerDelivery(), float64(max(o.Partitions, b.opts.InFlight))
				if receiver && (wait <= 0 || wait.Seconds() > lanes/tl.rate()) {
					t.Errorf("receiver on: a delivery waited %v on the store in a round of %.0f deliveries/s", wait, tl.rate())
				}
				if !receiver && wait != 0 {
					t.Errorf("receiver off: a delivery waited %v on a store", wait)
				}
				// Inside the routers' middlewares a delivery spends its store
				// wait and more, and again no longer than the round lasted.
				if in := tl.handlingPerDelivery(); in < wait || in <= 0 || in.Seconds() > lanes/tl.rate() {
					t.Errorf("receiver %v: a delivery spent %v inside the middlewares, waiting %v on the store, in a round of %.0f deliveries/s",
						receiver, in, wait, tl.rate())
				}
				if got, want := tl.delivered.Load(), int64(o.Messages+o.Duplicates); got < want {
					t.Errorf("receiver %v: %d deliveries acked, want %d", receiver, got, want)
				}
				for i, n := range tl.executionCounts() {
					want := 1
					if !receiver {
						want += copies[i]
					}
					if n != want {
						t.Errorf("receiver %v: message %d handled %d times, want %d", receiver, i, n, want)
						break
					}
				}
				if tl.rate() <= 0 {
					t.Errorf("receiver %v: rate %v, want positive", receiver, tl.rate())
				}
			}
		})
	}
}

// A profiled round reads where its CPU went: this process's profile and
// the CPU times of the record store's server and the broker, where they
// run on this machine; a round not profiled reads neither.
func TestProfiledRoundReadsItsCPU(t *testing.T) {
	testenv.Integration(t)
	o := transportOptions(t, "sql")
	ctx, b := openTransport(t, o)
	for _, profile := range []bool{true, false} {
		rt, err := b.RoundWith(ctx, RoundOptions{Receiver: true, Profile: profile})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("profile %v: %d deliveries at %.0f/s, CPU %+v", profile, rt.Delivered, rt.Rate, rt.CPU)
		if rt.Delivered != o.Messages+o.Duplicates {
			t.Errorf("profile %v: %d deliveries, want %d", profile, rt.Delivered, o.Messages+o.Duplicates)
		}
		if rt.CPU.Profiled != profile {
			t.Errorf("profile %v: profiled %v", profile, rt.CPU.Profiled)
		}
		for comm := range rt.CPU.Peers {
			if !profile || (comm != StoreServer && comm != BrokerCommand("sql")) {
				t.Errorf("profile %v: read the CPU of %s", profile, comm)
			}
		}
	}
}

// TestBatchSpreadsCopies checks the publishing order: every original once,
// the copies spread over the originals, each lag originals after its
// original; and in a round too short for that, after the last original.
func TestBatchSpreadsCopies(t *testing.T) {
	for _, c := range []struct {
		unique, duplicates, lag int
		trail                   int // the fewest originals between a message and its copy
	}{
		{unique: 100, duplicates: 30, lag: 10, trail: 10},
		{unique: 1000, duplicates: 200, lag: 128, trail: 128},
		{unique: 100, duplicates: 20, lag: 128, trail: 1},
	} {
		msgs, copies := batch("r", c.unique, c.duplicates, c.lag)
		if len(msgs) != c.unique+c.duplicates {
			t.Fatalf("%+v: %d messages, want %d", c, len(msgs), c.unique+c.duplicates)
		}
		position := map[string]int{} // of each original, counted in originals
		originals := 0
		for _, m := range msgs {
			k := m.Metadata.Get("idempotency_key")
			if m.Metadata.Get(indexMetadata) == "" {
				t.Fatal("message without index")
			}
			p, seen := position[k]
			if !seen {
				position[k] = originals
				originals++
				continue
			}
			if trail := originals - 1 - p; trail < c.trail {
				t.Errorf("%+v: a copy of %s follows it by %d originals, want at least %d", c, k, trail, c.trail)
			}
		}
		total := 0
		for i, n := range copies {
			total += n
			if n > 1 {
				t.Errorf("%+v: message %d has %d copies, want them spread one each", c, i, n)
			}
		}
		if total != c.duplicates || len(position) != c.unique {
			t.Errorf("%+v: %d copies over %d keys", c, total, len(position))
		}
	}
}

// TestReceiverRoundTripsPerMessage counts the Redis round trips of a round
// with the receiver on: two per unique message (claim, complete), none per
// copy (the service's local cache holds the completed record its claim
// finds). One message is in flight at a time, so that no copy finds its
// original in progress (which costs a claim per redelivery).
func TestReceiverRoundTripsPerMessage(t *testing.T) {
	o := transportOptions(t, "gochannel")
	o.InFlight = 1
	client := testenv.Redis(t)
	meter := &redismeter.Meter{}
	client.AddHook(meter)
	o.Redis = client
	ctx, b := openTransport(t, o)
	// A first round loads the store's scripts on a server that does not
	// know them yet (an EVALSHA answered NOSCRIPT, then an EVAL): the
	// second is the one counted.
	for round := range 2 {
		meter.Reset()
		if _, err := b.round(ctx, RoundOptions{Receiver: true}, b.opts.InFlight, nil); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	if got, want := meter.RoundTrips(), int64(2*o.Messages); got != want {
		t.Errorf("%d Redis round trips for %d messages and %d copies, want %d", got, o.Messages, o.Duplicates, want)
	}
}

// TestTransportOptionsRejectIncomplete checks that a bench missing what
// its kind needs is refused before it touches a service.
func TestTransportOptionsRejectIncomplete(t *testing.T) {
	ctx := context.Background()
	for name, o := range map[string]TransportOptions{
		"unknown kind":              {Kind: "mqtt"},
		"nats without URL":          {Kind: "nats"},
		"redisstream without URL":   {Kind: "redisstream"},
		"amqp without URL":          {Kind: "amqp"},
		"sql without URL":           {Kind: "sql"},
		"no Redis":                  {Kind: "gochannel"},
		"two gochannel routers":     {Kind: "gochannel", Consumers: 2},
		"more copies than messages": {Kind: "gochannel", Messages: 5, Duplicates: 6},
	} {
		if _, err := NewTransportBench(ctx, o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := NewModeBench(ctx, ModeOptions{}); err == nil {
		t.Error("a mode bench without a PostgreSQL URL was accepted")
	}
}

// The bench's subscribers hold as many messages as the service's do by
// default.
func TestDefaultInFlightIsTheService(t *testing.T) {
	cfg, err := app.LoadConfig([]string{"ALLOW_ANONYMOUS=true"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HandlerConcurrency != DefaultInFlight {
		t.Errorf("DefaultInFlight = %d, HANDLER_CONCURRENCY defaults to %d", DefaultInFlight, cfg.HandlerConcurrency)
	}
}

// The receiver's store in the rounds is the service's by default: a zero
// Redis Config batches as STORE_BATCH_SIZE does, and a zero cache Config
// holds as many completed records, as long, as DEDUP_CACHE_SIZE and
// DEDUP_CACHE_MAX_AGE do.
func TestServiceStoreIsTheServiceDefault(t *testing.T) {
	cfg, err := app.LoadConfig([]string{"ALLOW_ANONYMOUS=true"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.StoreBatchSize != redisstore.DefaultBatchSize {
		t.Errorf("STORE_BATCH_SIZE defaults to %d, a zero Redis Config to %d", cfg.StoreBatchSize, redisstore.DefaultBatchSize)
	}
	if cfg.DedupCacheSize != cache.DefaultSize || cfg.DedupCacheMaxAge != cache.DefaultMaxAge {
		t.Errorf("DEDUP_CACHE_SIZE and _MAX_AGE default to %d and %v, a zero cache Config to %d and %v",
			cfg.DedupCacheSize, cfg.DedupCacheMaxAge, cache.DefaultSize, cache.DefaultMaxAge)
	}
}
