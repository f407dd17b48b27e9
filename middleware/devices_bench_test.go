package middleware

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/stores"
)

// The benchmarks below set each speed device of the lease-mode path beside
// the standard library's way of doing the same, in the same run, so that
// each can be checked to still earn its place:
//
//   - BenchmarkRouterStack: the Watermill face with and without growStack,
//     in a GoChannel router, whose goroutine per message is where the
//     stack grows.
//   - BenchmarkFnContext: fn's context, fnContext against
//     context.WithCancelCause(withToken(ctx, token)), for a handler that
//     checks its context but never waits on it.
//   - BenchmarkFinishContext: a Claim and a Complete on the memory store,
//     the Complete with detachedCtx against
//     context.WithTimeout(context.WithoutCancel(ctx), d);
//     BenchmarkPostgresFinish does the same on PostgreSQL.
//   - BenchmarkHeartbeat: a heartbeat started and stopped by a handler
//     that returns within Lease/3, in the Receiver's beats against a
//     time.AfterFunc per run, from concurrent handlers.
//
// Besides ns/op, each but BenchmarkHeartbeat reports cpu-ns/op (see
// cpuTime), steadier on a shared machine.

func BenchmarkRouterStack(b *testing.B) {
	noGrow := func(r *Receiver) message.HandlerMiddleware {
		o := messageOptions{key: KeyFromMetadata(MetadataKey), fingerprint: PayloadFingerprint}
		return func(h message.HandlerFunc) message.HandlerFunc {
			return (&messageHandler{r: r, o: o, h: h}).handle
		}
	}
	b.Run("stack=grown", func(b *testing.B) {
		r, _ := newBenchReceiver(b)
		benchRouter(b, r.Middleware())
	})
	b.Run("stack=std", func(b *testing.B) {
		r, _ := newBenchReceiver(b)
		benchRouter(b, noGrow(r))
	})
}

func BenchmarkFnContext(b *testing.B) {
	parent := handlerContext(b)
	const token = stores.Token("t")
	// A handler that checks its context and reads the token, as one that
	// fences its own writes would.
	fn := func(ctx context.Context) {
		if ctx.Err() != nil {
			b.Fatal("fn's context ended")
		}
		if _, ok := TokenFromContext(ctx); !ok {
			b.Fatal("no token")
		}
	}
	b.Run("ctx=lazy", func(b *testing.B) {
		run := new(leasedRun) // as the receiver holds it
		b.ReportAllocs()
		cpu := cpuTime(b)
		for b.Loop() {
			run.fnCtx = fnContext{parent: parent, token: token}
			fn(&run.fnCtx)
			run.fnCtx.release()
		}
		reportCPU(b, cpu)
	})
	b.Run("ctx=std", func(b *testing.B) {
		b.ReportAllocs()
		cpu := cpuTime(b)
		for b.Loop() {
			ctx, cancel := context.WithCancelCause(withToken(parent, token))
			fn(ctx)
			cancel(nil)
		}
		reportCPU(b, cpu)
	})
}

func BenchmarkFinishContext(b *testing.B) {
	parent := handlerContext(b)
	for _, kind := range []string{"detached", "std"} {
		b.Run("ctx="+kind, func(b *testing.B) {
			_, s := newBenchReceiver(b)
			keys := make([]string, 0, benchChunk)
			run := new(leasedRun) // as the receiver holds it
			b.ReportAllocs()
			cpu := cpuTime(b)
			for b.Loop() {
				if len(keys) == 0 {
					b.StopTimer()
					for range benchChunk {
						keys = append(keys, benchHandler+":"+watermill.NewUUID())
					}
					b.StartTimer()
				}
				k := keys[len(keys)-1]
				keys = keys[:len(keys)-1]
				c, err := s.Claim(parent, k, []byte("fp"), DefaultLease)
				if err != nil {
					b.Fatal(err)
				}
				if kind == "detached" {
					run.finishCtx = detachedCtx{}
					run.finishCtx.init(parent, finishTimeout)
					err = s.Complete(&run.finishCtx, k, c.Token, nil, DefaultTTL)
					run.finishCtx.stop()
				} else {
					ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), finishTimeout)
					err = s.Complete(ctx, k, c.Token, nil, DefaultTTL)
					cancel()
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu)
		})
	}
}

// afterFuncBeat is the standard library's heartbeat: a timer per run,
// re-armed by each extension (here a no-op: the runs end first).
type afterFuncBeat struct {
	mu      sync.Mutex
	stopped bool
	timer   *time.Timer
}

func (h *afterFuncBeat) beat() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.stopped {
		h.timer.Reset(DefaultLease / 3)
	}
}

func BenchmarkHeartbeat(b *testing.B) {
	b.Run("beat=beats", func(b *testing.B) {
		r, _ := newBenchReceiver(b)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			run := new(leasedRun) // as the receiver holds it
			for pb.Next() {
				run.hb = heartbeat{r: r, fnCtx: &run.fnCtx}
				run.hb.start(time.Now())
				run.hb.stop()
			}
		})
	})
	b.Run("beat=std", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				h := new(afterFuncBeat)
				h.mu.Lock()
				h.timer = time.AfterFunc(DefaultLease/3, h.beat)
				h.mu.Unlock()
				h.mu.Lock()
				h.stopped = true
				h.timer.Stop()
				h.mu.Unlock()
			}
		})
	})
}
