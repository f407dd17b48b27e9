package consume

import (
	"context"
	"crypto/sha256"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// The benchmarks below measure the receiver's cost per message on the memory
// store, against the floor it cannot go below:
//
//   - BenchmarkRouter: a GoChannel router with a no-op handler, unique
//     messages, with no middleware, with the receiver, and with Watermill's
//     Deduplicator (defaults: Adler-32 of the payload, in-memory map). One
//     op is one message, published and handled.
//   - BenchmarkReceiverHandler: the wrapped HandlerFunc called directly, so
//     the router's own cost and allocations stay out of the figure (with
//     the Prometheus observer: package metrics' BenchmarkReceiverHandler).
//   - BenchmarkMemoryStoreClaimComplete: the store calls every unique
//     message needs, on their own: the part of the receiver's cost that
//     belongs to the store.
//
// (The HTTP face's, on one request with a fresh Idempotency-Key, is
// package idempotencykey's BenchmarkHTTP.)
//
// The receiver's overhead in the router is (receiver-memory - none); the
// 0.9x throughput target holds when that is at most 0.1 x none.
//
// Besides ns/op, each reports cpu-ns/op: the process's CPU time (user and
// system, every goroutine and the GC included) per message (see
// testenv.CPUTime). On a CPU-bound router the ratio of two is the
// throughput ratio.

func BenchmarkRouter(b *testing.B) {
	b.Run("none", func(b *testing.B) { benchRouter(b, nil) })
	b.Run("receiver-memory", func(b *testing.B) {
		r, _ := receivertest.NewBenchReceiver(b, receiver.Config{})
		benchRouter(b, Middleware(r))
	})
	b.Run("deduplicator", func(b *testing.B) {
		// Adler-32, its default hasher, collides on payloads this alike
		// and would drop most of them as duplicates.
		d := &middleware.Deduplicator{KeyFactory: middleware.NewMessageHasherSHA256(math.MaxInt64)}
		benchRouter(b, d.Middleware)
	})
}

// benchWindow bounds the messages published but not yet handled. GoChannel
// starts a goroutine per published message until it is acked; without a
// bound, b.N goroutines would contend for the subscriber and the figure
// would measure the scheduler.
const benchWindow = 256

// benchRouter publishes b.N unique messages to a GoChannel router whose one
// handler, wrapped in mw when set, does nothing, keeping at most benchWindow
// in flight, and waits until every message was handled.
func benchRouter(b *testing.B, mw message.HandlerMiddleware) {
	ps := gochannel.NewGoChannel(gochannel.Config{OutputChannelBuffer: 1024}, watermill.NopLogger{})
	defer func() { _ = ps.Close() }()
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: 5 * time.Second}, watermill.NopLogger{})
	if err != nil {
		b.Fatal(err)
	}
	var handled atomic.Int64
	want := int64(b.N)
	done := make(chan struct{})
	window := make(chan struct{}, benchWindow)
	h := router.AddConsumerHandler(receivertest.BenchHandler, "bench", ps, func(*message.Message) error {
		<-window
		if handled.Add(1) == want {
			close(done)
		}
		return nil
	})
	if mw != nil {
		h.AddMiddleware(mw)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- router.Run(context.Background()) }()
	<-router.Running()
	defer func() {
		_ = router.Close()
		<-stopped
	}()

	msgs := make([]*message.Message, b.N)
	for i := range msgs {
		msgs[i] = message.NewMessage(watermill.NewUUID(), receivertest.BenchPayload(i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := testenv.CPUTime(b)
	for _, msg := range msgs {
		window <- struct{}{}
		if err := ps.Publish("bench", msg); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-done:
	case <-time.After(time.Minute):
		b.Fatalf("handled %d of %d messages", handled.Load(), b.N)
	}
	b.StopTimer()
	testenv.ReportCPU(b, cpu)
}

func BenchmarkReceiverHandler(b *testing.B) {
	noop := func(*message.Message) ([]*message.Message, error) { return nil, nil }
	b.Run("none", func(b *testing.B) {
		// The no-op handler runs billions of times; one message will do.
		msg := message.NewMessage(watermill.NewUUID(), receivertest.BenchPayload(0))
		msg.SetContext(receivertest.HandlerContext(b))
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if _, err := noop(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("receiver-memory", func(b *testing.B) {
		r, _ := receivertest.NewBenchReceiver(b, receiver.Config{})
		receivertest.BenchHandlerFunc(b, Middleware(r)(noop))
	})
}

// BenchmarkMemoryStoreClaimComplete is the store's share of a unique
// message: one Claim and one Complete with an empty result, keyed and
// fingerprinted as the receiver does.
func BenchmarkMemoryStoreClaimComplete(b *testing.B) {
	_, s := receivertest.NewBenchReceiver(b, receiver.Config{})
	ctx := context.Background()
	keys := make([]string, b.N)
	fps := make([][32]byte, b.N)
	for i := range keys {
		keys[i] = receivertest.BenchHandler + ":" + watermill.NewUUID()
		fps[i] = sha256.Sum256(receivertest.BenchPayload(i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := testenv.CPUTime(b)
	for i, k := range keys {
		c, err := s.Claim(ctx, k, fps[i][:], receiver.DefaultLease)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Complete(ctx, k, c.Token, nil, receiver.DefaultTTL); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	testenv.ReportCPU(b, cpu)
}
