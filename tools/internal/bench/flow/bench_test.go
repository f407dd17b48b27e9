package flow

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
)

// benchSize is the short size, the full one with BENCH_FULL=1, or a
// smoke size that only proves the benchmark runs with BENCH_SMOKE=1, as
// make test sets it (-short would skip the services).
func benchSize(short, full int) int {
	switch {
	case testenv.Getenv("BENCH_FULL", "") == "1":
		return full
	case testenv.Getenv("BENCH_SMOKE", "") == "1":
		return min(short, 100)
	}
	return short
}

// BenchmarkTransport reports each transport's messages per second with
// the receiver on and off, one round per iteration, and with it on the time
// a delivery waited on the Redis store. Rounds are small unless
// BENCH_FULL=1; the figures are then rough. BENCH_IN_FLIGHT sets the
// messages each handler holds at once (default DefaultInFlight).
func BenchmarkTransport(b *testing.B) {
	inFlight, err := strconv.Atoi(testenv.Getenv("BENCH_IN_FLIGHT", strconv.Itoa(DefaultInFlight)))
	if err != nil || inFlight < 1 {
		b.Fatalf("BENCH_IN_FLIGHT=%q: want a positive integer", testenv.Getenv("BENCH_IN_FLIGHT", ""))
	}
	for _, kind := range []string{"gochannel", "sql", "amqp", "kafka", "nats", "redisstream"} {
		for _, receiver := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/receiver=%v", kind, receiver), func(b *testing.B) {
				o := transportOptions(b, kind)
				o.Messages, o.Duplicates, o.InFlight = benchSize(2000, DefaultMessages), 0, inFlight
				if kind == "kafka" {
					o.Messages = benchSize(5000, DefaultKafkaMessages)
				}
				var times RoundTimes
				benchRounds(b, func(ctx context.Context) (*TransportBench, error) { return NewTransportBench(ctx, o) },
					func(ctx context.Context, t *TransportBench) (rate float64, err error) {
						times, err = t.RoundWith(ctx, RoundOptions{Receiver: receiver})
						return times.Rate, err
					})
				if receiver {
					b.ReportMetric(float64(times.StoreWait.Microseconds()), "store-wait-µs/msg")
					b.ReportMetric(float64(times.Own.Microseconds()), "receiver-own-µs/msg")
				}
			})
		}
	}
}

// BenchmarkMode reports the sql transport's messages per second in lease
// and in transaction mode.
func BenchmarkMode(b *testing.B) {
	for _, mode := range []Mode{LeaseMode, TransactionMode} {
		b.Run(string(mode), func(b *testing.B) {
			testenv.Postgres(b)
			o := ModeOptions{PostgresURL: testenv.PostgresURL(), Messages: benchSize(1000, DefaultMessages)}
			benchRounds(b, func(ctx context.Context) (*ModeBench, error) { return NewModeBench(ctx, o) },
				func(ctx context.Context, m *ModeBench) (float64, error) { return m.Round(ctx, mode) })
		})
	}
}

// BenchmarkHTTP reports p50 and p99 of POST /v1/charges per variant.
func BenchmarkHTTP(b *testing.B) {
	for _, v := range []Variant{NoMiddleware, MemoryStore, RedisStore} {
		b.Run(string(v), func(b *testing.B) {
			ctx := context.Background()
			h, err := NewHTTPBench(ctx, HTTPOptions{Redis: testenv.Redis(b), Requests: benchSize(2000, DefaultRequests)})
			if err != nil {
				b.Fatal(err)
			}
			var p50, p99 float64
			for b.Loop() {
				ps, err := h.RoundPercentiles(ctx, v, 50, 99)
				if err != nil {
					b.Fatal(err)
				}
				p50, p99 = ps[0], ps[1]
			}
			b.ReportMetric(p50, "p50-µs")
			b.ReportMetric(p99, "p99-µs")
		})
	}
}

// benchRounds builds a bench, runs one round per iteration and reports the
// last round's messages per second.
func benchRounds[B interface{ Close() error }](b *testing.B, open func(context.Context) (B, error),
	round func(context.Context, B) (float64, error)) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bench, err := open(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := bench.Close(); err != nil {
			b.Error(err)
		}
	}()
	var rate float64
	for b.Loop() {
		if rate, err = round(ctx, bench); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(rate, "msgs/s")
}
