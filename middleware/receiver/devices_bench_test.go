package receiver

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/memory"
)

// The benchmarks below set each speed device of the lease-mode path beside
// the standard library's way of doing the same, in the same run, so that
// each can be checked to still earn its place (the Watermill face's, its
// stack grown before the receiver runs, is package consume's
// BenchmarkRouterStack):
//
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
// testenv.CPUTime), steadier on a shared machine. fn's context and the
// finishing calls' derive from a caller's context as a transport gives it
// (see liveContext).

// benchChunk bounds the keys made ahead of a benchmark's loop.
const benchChunk = 10_000

// newBenchReceiver is a receiver on a memory store that holds every record
// a run makes, which it returns too.
func newBenchReceiver(tb testing.TB) (*Receiver, *memory.Store) {
	tb.Helper()
	s := memory.New(memory.Config{MaxEntries: 1 << 24})
	tb.Cleanup(func() { _ = s.Close() })
	r, err := New(Config{Store: s, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	return r, s
}

// liveContext is the caller's context as a transport gives it: live,
// cancellable, with values, ended when the benchmark ends.
func liveContext(b *testing.B) context.Context {
	ctx, cancel := context.WithCancel(context.WithValue(b.Context(), liveContextKey{}, "handler"))
	b.Cleanup(cancel)
	return ctx
}

type liveContextKey struct{}

func BenchmarkFnContext(b *testing.B) {
	parent := liveContext(b)
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
		cpu := testenv.CPUTime(b)
		for b.Loop() {
			run.fnCtx = fnContext{parent: parent, token: token}
			fn(&run.fnCtx)
			run.fnCtx.release()
		}
		testenv.ReportCPU(b, cpu)
	})
	b.Run("ctx=std", func(b *testing.B) {
		b.ReportAllocs()
		cpu := testenv.CPUTime(b)
		for b.Loop() {
			ctx, cancel := context.WithCancelCause(withToken(parent, token))
			fn(ctx)
			cancel(nil)
		}
		testenv.ReportCPU(b, cpu)
	})
}

func BenchmarkFinishContext(b *testing.B) {
	parent := liveContext(b)
	for _, kind := range []string{"detached", "std"} {
		b.Run("ctx="+kind, func(b *testing.B) {
			_, s := newBenchReceiver(b)
			keys := make([]string, 0, benchChunk)
			made := 0             // keys, each unique
			run := new(leasedRun) // as the receiver holds it
			b.ReportAllocs()
			cpu := testenv.CPUTime(b)
			for b.Loop() {
				if len(keys) == 0 {
					b.StopTimer()
					for range benchChunk {
						made++
						keys = append(keys, "bench_handler:"+strconv.Itoa(made))
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
			testenv.ReportCPU(b, cpu)
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
