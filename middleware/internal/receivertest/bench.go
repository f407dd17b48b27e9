package receivertest

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/stores/memory"
)

// BenchHandler is the name of the handler whose messages the benchmarks
// handle (see [HandlerContext]).
const BenchHandler = "bench_handler"

// BenchPayload is a payload of a typical event's size, made unique by i.
func BenchPayload(i int) []byte {
	return fmt.Appendf(nil, `{"payment_id":"p-%09d","amount":1250,"currency":"EUR","customer":"c-42"}`, i)
}

// benchRecords is the memory store's capacity in the benchmarks: more
// records than a run makes, since a full store refuses new keys.
const benchRecords = 1 << 24

// NewBenchReceiver makes a receiver on cfg for a benchmark: on a fresh
// memory store that holds every record a run makes, which it returns too,
// and with its logs discarded.
func NewBenchReceiver(tb testing.TB, cfg receiver.Config) (*receiver.Receiver, *memory.Store) {
	tb.Helper()
	s := memory.New(memory.Config{MaxEntries: benchRecords})
	tb.Cleanup(func() { _ = s.Close() })
	cfg.Store = s
	cfg.Logger = slog.New(slog.DiscardHandler)
	r, err := receiver.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return r, s
}

// HandlerContext returns the context a router gives a message of the
// handler named BenchHandler: the handler name is set under a key only the
// router can write. The message is held unacknowledged until the test
// ends, so that its context stays live, as it is while a router handles
// it.
func HandlerContext(tb testing.TB) context.Context {
	tb.Helper()
	ps := gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{})
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: time.Second}, watermill.NopLogger{})
	if err != nil {
		tb.Fatal(err)
	}
	got := make(chan context.Context, 1)
	release := make(chan struct{})
	router.AddConsumerHandler(BenchHandler, "ctx", ps, func(msg *message.Message) error {
		got <- msg.Context()
		<-release
		return nil
	})
	stopped := make(chan error, 1)
	go func() { stopped <- router.Run(context.Background()) }()
	<-router.Running()
	tb.Cleanup(func() {
		close(release)
		_ = router.Close()
		<-stopped
		_ = ps.Close()
	})
	if err := ps.Publish("ctx", message.NewMessage(watermill.NewUUID(), nil)); err != nil {
		tb.Fatal(err)
	}
	ctx := <-got
	if message.HandlerNameFromCtx(ctx) != BenchHandler {
		tb.Fatal("the router's context has no handler name")
	}
	return ctx
}

// BenchChunk bounds the messages made ahead of a benchmark's loop.
const BenchChunk = 10_000

// BenchHandlerFunc calls h once per unique message, as the router would,
// one message at a time, and reports cpu-ns/op besides. Messages are made
// outside the timer, a chunk at a time, each with a [HandlerContext].
func BenchHandlerFunc(b *testing.B, h message.HandlerFunc) {
	ctx := HandlerContext(b)
	msgs := make([]*message.Message, min(b.N, BenchChunk))
	b.ReportAllocs()
	b.ResetTimer()
	var cpu time.Duration
	for done := 0; done < b.N; done += len(msgs) {
		b.StopTimer()
		msgs = msgs[:min(b.N-done, BenchChunk)]
		for i := range msgs {
			msgs[i] = message.NewMessage(watermill.NewUUID(), BenchPayload(done+i))
			msgs[i].SetContext(ctx)
		}
		start := testenv.CPUTime(b)
		b.StartTimer()
		for _, msg := range msgs {
			if _, err := h(msg); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		cpu += testenv.CPUTime(b) - start
	}
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}
