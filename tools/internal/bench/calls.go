package bench

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onceflow/onceflow/stores"
)

// CallsPerPair is how many store calls one unique message costs: a Claim
// and a Complete.
const CallsPerPair = 2

// StoreCalls measures store calls/s: callers goroutines each Claim a fresh
// key and Complete it, over and over for window, on a fresh store of backend
// b. The rate counts both calls of each pair.
func StoreCalls(env *Env, b Backend, callers int, window time.Duration) func(ctx context.Context) (float64, error) {
	return storeRate(env, b, callers, window, true, nil)
}

// StoreClaims measures Claims/s: callers goroutines each Claim a fresh key,
// over and over for window, on a fresh store of backend b. No Complete
// follows, so the rate is the claim path's alone: the one operation the
// references (SET NX, INSERT .. ON CONFLICT) run per request. fill, when
// not nil, keeps each round's mean claim batch.
func StoreClaims(env *Env, b Backend, callers int, window time.Duration, fill *BatchFill) func(ctx context.Context) (float64, error) {
	return storeRate(env, b, callers, window, false, fill)
}

// storeRate returns calls/s of callers goroutines each claiming fresh keys
// for window, and completing each when complete is set, on a fresh store
// of backend b, its claim batches counted in fill when it is not nil.
// Every claim must acquire its key.
func storeRate(env *Env, b Backend, callers int, window time.Duration, complete bool, fill *BatchFill) func(ctx context.Context) (float64, error) {
	calls := 1
	if complete {
		calls = CallsPerPair
	}
	var observe func(op string, calls int)
	if fill != nil {
		observe = fill.Observe
	}
	return func(ctx context.Context) (float64, error) {
		s, closeStore, err := env.newStore(b, env.Redis, observe)
		if err != nil {
			return 0, err
		}
		defer closeStore()
		if fill != nil {
			defer fill.EndRound()
		}
		fp := []byte("fingerprint")
		result := []byte("result")
		ops, elapsed, err := spin(ctx, callers, window, func(ctx context.Context, key string) error {
			c, err := s.Claim(ctx, key, fp, 30*time.Second)
			if err != nil {
				return err
			}
			if c.Status != stores.Acquired {
				return fmt.Errorf("claim of fresh key %q: %v", key, c.Status)
			}
			if !complete {
				return nil
			}
			return s.Complete(ctx, key, c.Token, result, 10*time.Minute)
		})
		if err != nil {
			return 0, err
		}
		return float64(calls) * float64(ops) / elapsed.Seconds(), nil
	}
}

// ReceiverCalls measures messages/s through the receiver's Execute on a
// fresh store of backend b: callers goroutines each run fresh keys whose
// payload has size bytes (fingerprinted, and stored as the result).
func ReceiverCalls(env *Env, b Backend, callers, size int, window time.Duration) func(ctx context.Context) (float64, error) {
	return func(ctx context.Context) (float64, error) {
		s, closeStore, err := env.NewStore(b)
		if err != nil {
			return 0, err
		}
		defer closeStore()
		r, err := newReceiver(s)
		if err != nil {
			return 0, err
		}
		payload := make([]byte, size)
		n, elapsed, err := spin(ctx, callers, window, func(ctx context.Context, key string) error {
			_, err := r.Execute(ctx, "bench", key, fingerprint(payload),
				func(context.Context) ([]byte, error) { return payload, nil })
			return err
		})
		if err != nil {
			return 0, err
		}
		return float64(n) / elapsed.Seconds(), nil
	}
}

// fingerprint is the receiver's default fingerprint of a payload.
func fingerprint(payload []byte) []byte {
	sum := sha256.Sum256(payload)
	return sum[:]
}

// spin runs op on fresh keys from callers goroutines until window has
// passed, and returns how many ops completed and the time they took. The
// window starts once every caller has run one op (see below).
func spin(ctx context.Context, callers int, window time.Duration,
	op func(ctx context.Context, key string) error) (int64, time.Duration, error) {
	prefix := nextKeys()
	// One untimed op per caller first, all at once: the pool opens its
	// connections before the clock starts, as the reference programs do.
	var warm sync.WaitGroup
	warmErrs := make([]error, callers)
	for i := range callers {
		// "." never occurs in the base-36 numbers of the timed keys.
		warm.Go(func() { warmErrs[i] = op(ctx, prefix+"."+strconv.Itoa(i)) })
	}
	warm.Wait()
	if err := errors.Join(warmErrs...); err != nil {
		return 0, 0, err
	}
	var (
		seq, ops atomic.Int64
		stop     atomic.Bool
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	start := time.Now()
	timer := time.AfterFunc(window, func() { stop.Store(true) })
	defer timer.Stop()
	for range callers {
		wg.Go(func() {
			for !stop.Load() && ctx.Err() == nil {
				if err := op(ctx, prefix+strconv.FormatUint(spread(uint64(seq.Add(1))), 36)); err != nil {
					errOnce.Do(func() { firstErr = err })
					stop.Store(true)
					return
				}
				ops.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return 0, 0, firstErr
	}
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	return ops.Load(), elapsed, nil
}

// spread maps a sequence number to a key number one to one (splitmix64's
// finalizer, each step invertible), so consecutive operations claim keys
// scattered over the key space as message IDs and Idempotency-Keys are,
// not keys that each sort just after the last: in a B-tree the latter all
// land on its rightmost page, which would flatter PostgreSQL against
// pgbench's random keys.
func spread(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
