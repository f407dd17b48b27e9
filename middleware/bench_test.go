package middleware

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	wmw "github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/stores/memory"
)

// The benchmarks below measure the receiver's cost per message on the memory
// store, against the floor it cannot go below:
//
//   - BenchmarkRouter: a GoChannel router with a no-op handler, unique
//     messages, with no middleware, with the receiver, and with Watermill's
//     Deduplicator (defaults: Adler-32 of the payload, in-memory map). One
//     op is one message, published and handled.
//   - BenchmarkReceiverHandler: the wrapped HandlerFunc called directly, so
//     the router's own cost and allocations stay out of the figure.
//   - BenchmarkMemoryStoreClaimComplete: the store calls every unique
//     message needs, on their own: the part of the receiver's cost that
//     belongs to the store.
//   - BenchmarkHTTP: the HTTP face ([Receiver.HTTP]) on one request with
//     a fresh Idempotency-Key, against the same handler unwrapped.
//
// The receiver's overhead in the router is (receiver-memory - none); the
// 0.9x throughput target holds when that is at most 0.1 x none.
//
// Besides ns/op, each reports cpu-ns/op: the process's CPU time (user and
// system, every goroutine and the GC included) per message. On a shared
// machine wall time moves with the other processes' load; CPU time much
// less, and on a CPU-bound router their ratio is the throughput ratio.

// cpuTime is the CPU time this process has used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per op since start.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
}

const benchHandler = "bench_handler"

// benchPayload is a payload of a typical event's size, made unique by i.
func benchPayload(i int) []byte {
	return fmt.Appendf(nil, `{"payment_id":"p-%09d","amount":1250,"currency":"EUR","customer":"c-42"}`, i)
}

// benchRecords is the memory store's capacity in the benchmarks: more
// records than a run makes, since a full store refuses new keys.
const benchRecords = 1 << 24

func newBenchReceiver(tb testing.TB) (*Receiver, *memory.Store) {
	tb.Helper()
	s := memory.New(memory.Config{MaxEntries: benchRecords})
	tb.Cleanup(func() { _ = s.Close() })
	r, err := NewReceiver(Config{Store: s, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	return r, s
}

func BenchmarkRouter(b *testing.B) {
	b.Run("none", func(b *testing.B) { benchRouter(b, nil) })
	b.Run("receiver-memory", func(b *testing.B) {
		r, _ := newBenchReceiver(b)
		benchRouter(b, r.Middleware())
	})
	b.Run("deduplicator", func(b *testing.B) {
		// Adler-32, its default hasher, collides on payloads this alike
		// and would drop most of them as duplicates.
		d := &wmw.Deduplicator{KeyFactory: wmw.NewMessageHasherSHA256(math.MaxInt64)}
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
	h := router.AddConsumerHandler(benchHandler, "bench", ps, func(*message.Message) error {
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
		msgs[i] = message.NewMessage(watermill.NewUUID(), benchPayload(i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime(b)
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
	reportCPU(b, cpu)
}

// handlerContext returns the context a router gives a message of the handler
// named benchHandler: the handler name is set under a key only the router
// can write. The message is held unacknowledged until the benchmark ends,
// so that its context stays live, as it is while a router handles it.
func handlerContext(tb testing.TB) context.Context {
	tb.Helper()
	ps := gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{})
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: time.Second}, watermill.NopLogger{})
	if err != nil {
		tb.Fatal(err)
	}
	got := make(chan context.Context, 1)
	release := make(chan struct{})
	router.AddConsumerHandler(benchHandler, "ctx", ps, func(msg *message.Message) error {
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
	if message.HandlerNameFromCtx(ctx) != benchHandler {
		tb.Fatal("the router's context has no handler name")
	}
	return ctx
}

func BenchmarkReceiverHandler(b *testing.B) {
	noop := func(*message.Message) ([]*message.Message, error) { return nil, nil }
	b.Run("none", func(b *testing.B) {
		// The no-op handler runs billions of times; one message will do.
		msg := message.NewMessage(watermill.NewUUID(), benchPayload(0))
		msg.SetContext(handlerContext(b))
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if _, err := noop(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("receiver-memory", func(b *testing.B) {
		r, _ := newBenchReceiver(b)
		benchHandlerFunc(b, r.Middleware()(noop))
	})
	b.Run("receiver-memory-prometheus", func(b *testing.B) {
		_, s := newBenchReceiver(b)
		obs, err := NewPrometheusObserver(prometheus.NewRegistry(), "memory")
		if err != nil {
			b.Fatal(err)
		}
		r, err := NewReceiver(Config{Store: s, Observer: obs, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		benchHandlerFunc(b, r.Middleware()(noop))
	})
}

// benchChunk bounds the messages made ahead of a benchmark's loop.
const benchChunk = 10_000

// benchHandlerFunc calls h once per unique message, as the router would,
// one message at a time. Messages are made outside the timer, a chunk at a
// time.
func benchHandlerFunc(b *testing.B, h message.HandlerFunc) {
	ctx := handlerContext(b)
	msgs := make([]*message.Message, min(b.N, benchChunk))
	b.ReportAllocs()
	b.ResetTimer()
	var cpu time.Duration
	for done := 0; done < b.N; done += len(msgs) {
		b.StopTimer()
		msgs = msgs[:min(b.N-done, benchChunk)]
		for i := range msgs {
			msgs[i] = message.NewMessage(watermill.NewUUID(), benchPayload(done+i))
			msgs[i].SetContext(ctx)
		}
		start := cpuTime(b)
		b.StartTimer()
		for _, msg := range msgs {
			if _, err := h(msg); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		cpu += cpuTime(b) - start
	}
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}

// BenchmarkMemoryStoreClaimComplete is the store's share of a unique
// message: one Claim and one Complete with an empty result, keyed and
// fingerprinted as the receiver does.
func BenchmarkMemoryStoreClaimComplete(b *testing.B) {
	_, s := newBenchReceiver(b)
	ctx := context.Background()
	keys := make([]string, b.N)
	fps := make([][32]byte, b.N)
	for i := range keys {
		keys[i] = benchHandler + ":" + watermill.NewUUID()
		fps[i] = sha256.Sum256(benchPayload(i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime(b)
	for i, k := range keys {
		c, err := s.Claim(ctx, k, fps[i][:], DefaultLease)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Complete(ctx, k, c.Token, nil, DefaultTTL); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportCPU(b, cpu)
}

// paymentsHandler answers as the payments handler does: 202 with a small
// JSON body naming the request's first bytes, and two headers.
var paymentsHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Correlation-ID", "c-1")
	w.WriteHeader(http.StatusAccepted)
	fmt.Fprintf(w, `{"payment_id":%q,"status":"accepted"}`, body[:8])
})

// paymentsMux serves h as POST /v1/payments.
func paymentsMux(h http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("POST /v1/payments", h)
	return mux
}

// paymentRequest is the i-th request to paymentsMux: a payload unique to i
// under the Idempotency-Key i.
func paymentRequest(i int) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "/v1/payments", bytes.NewReader(benchPayload(i)))
	req.Header.Set(IdempotencyKeyHeader, strconv.Itoa(i))
	return req
}

// BenchmarkHTTP is the HTTP face's cost per request on the memory store:
// paymentsHandler served through a ServeMux to a recorder, with no
// middleware and behind [Receiver.HTTP]. Every request carries a fresh key.
// The face's cost is (receiver-memory - none). Its client quota is one
// that never refuses, so that its cost is measured with the rest.
func BenchmarkHTTP(b *testing.B) {
	for _, name := range []string{"none", "receiver-memory"} {
		b.Run(name, func(b *testing.B) {
			var h http.Handler = paymentsHandler
			if name != "none" {
				r, _ := newBenchReceiver(b)
				h = r.HTTP(WithAnonymous(), WithClientQuota(math.MaxInt32, time.Second))(paymentsHandler)
			}
			mux := paymentsMux(h)
			b.ReportAllocs()
			start := cpuTime(b)
			i := 0
			for b.Loop() {
				i++
				w := httptest.NewRecorder()
				mux.ServeHTTP(w, paymentRequest(i))
				if w.Code != http.StatusAccepted {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
			reportCPU(b, start)
		})
	}
}
