package receiver

import (
	"context"
	"errors"
	"runtime/metrics"
	"strconv"
	"testing"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/postgres"
)

// BenchmarkPostgresFinish is lease mode's Complete and Release of a
// claimed key on PostgreSQL, on each context the receiver could finish a
// record with: its detachedCtx, or the standard library's
// context.WithTimeout(context.WithoutCancel(ctx), d). One op claims a fresh
// key, then completes or releases it. Besides ns/op and allocations it
// reports cpu-ns/op and goroutines/op, the goroutines the process started
// meanwhile: pgx watches each query's context with context.AfterFunc,
// which starts a goroutine for a context it cannot register with.
func BenchmarkPostgresFinish(b *testing.B) {
	pool := testenv.MigratedPostgres(b)
	for _, batch := range []int{0, 1} {
		s, err := postgres.New(pool, postgres.Config{BatchSize: batch})
		if err != nil {
			b.Fatal(err)
		}
		for _, op := range []string{"complete", "release"} {
			for _, kind := range []string{"detached", "std"} {
				b.Run("batch="+strconv.Itoa(batch)+"/op="+op+"/ctx="+kind, func(b *testing.B) {
					benchFinish(b, s, op, kind)
				})
			}
		}
	}
}

func benchFinish(b *testing.B, s stores.Store, op, kind string) {
	// The caller's context, as a transport gives it: cancellable, with
	// values.
	parent, cancel := context.WithCancel(context.WithValue(b.Context(), tokenKey{}, stores.Token("t")))
	defer cancel()
	finish := func(ctx context.Context, k string, t stores.Token) error {
		if op == "complete" {
			return s.Complete(ctx, k, t, nil, DefaultTTL)
		}
		return s.Release(ctx, k, t)
	}
	prefix := b.Name() + ":" + strconv.FormatUint(goroutinesCreated(b), 36) + ":"
	dc := new(detachedCtx)
	b.ReportAllocs()
	cpu, goroutines := testenv.CPUTime(b), goroutinesCreated(b)
	n := 0
	for b.Loop() {
		k := prefix + strconv.Itoa(n)
		n++
		c, err := s.Claim(parent, k, []byte("fp"), DefaultLease)
		if err != nil || c.Status != stores.Acquired {
			b.Fatalf("Claim = %v, %v", c.Status, err)
		}
		if kind == "detached" {
			*dc = detachedCtx{}
			dc.init(parent, finishTimeout)
			err = finish(dc, k, c.Token)
			dc.stop()
		} else {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), finishTimeout)
			err = finish(ctx, k, c.Token)
			cancel()
		}
		if err != nil && !errors.Is(err, stores.ErrLeaseLost) {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(testenv.CPUTime(b)-cpu)/float64(n), "cpu-ns/op")
	b.ReportMetric(float64(goroutinesCreated(b)-goroutines)/float64(n), "goroutines/op")
}

// goroutinesCreated is how many goroutines the process has started.
func goroutinesCreated(b *testing.B) uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		b.Fatal("the runtime does not count the goroutines it creates")
	}
	return s[0].Value.Uint64()
}
