package middleware

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/memory"
)

// waitTimeout bounds every wait on an event in these tests; reaching it is a
// failure, never the expected path.
const waitTimeout = 10 * time.Second

func newMemory(t *testing.T) *memory.Store {
	t.Helper()
	s := memory.New(memory.Config{})
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// newReceiver makes a receiver on cfg, with a fresh memory store and a
// recorder unless cfg has a store or observer; the recorder is nil when cfg
// has another observer. Logs are discarded.
func newReceiver(t *testing.T, cfg Config) (*Receiver, *recorder) {
	t.Helper()
	if cfg.Store == nil {
		cfg.Store = newMemory(t)
	}
	if cfg.Observer == nil {
		cfg.Observer = newRecorder()
	}
	rec, _ := cfg.Observer.(*recorder)
	cfg.Logger = slog.New(slog.DiscardHandler)
	r, err := NewReceiver(cfg)
	if err != nil {
		t.Fatalf("NewReceiver: %v", err)
	}
	return r, rec
}

// recorder is an Observer that counts what it is told and lets a test wait
// for a condition on the counts without sleeping.
type recorder struct {
	mu       sync.Mutex
	outcomes map[Outcome]int
	ops      map[string]int
	extends  map[Extension]int
	replayed int           // messages
	changed  chan struct{} // signalled after every observation
}

func newRecorder() *recorder {
	return &recorder{outcomes: map[Outcome]int{}, ops: map[string]int{}, extends: map[Extension]int{},
		changed: make(chan struct{}, 1)}
}

func (r *recorder) Outcome(_ string, o Outcome) {
	r.mu.Lock()
	r.outcomes[o]++
	r.mu.Unlock()
	r.signal()
}

func (r *recorder) StoreLatency(op string, _ time.Duration) {
	r.mu.Lock()
	r.ops[op]++
	r.mu.Unlock()
	r.signal()
}

func (r *recorder) LeaseExtension(_ string, e Extension) {
	r.mu.Lock()
	r.extends[e]++
	r.mu.Unlock()
	r.signal()
}

func (r *recorder) Replayed(_ string, n int) {
	r.mu.Lock()
	r.replayed += n
	r.mu.Unlock()
	r.signal()
}

func (r *recorder) extensions(e Extension) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.extends[e]
}

func (r *recorder) replays() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.replayed
}

func (r *recorder) signal() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *recorder) count(o Outcome) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.outcomes[o]
}

func (r *recorder) opCount(op string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ops[op]
}

func (r *recorder) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.outcomes {
		n += c
	}
	return n
}

// await blocks until cond holds, re-checking after every observation.
func (r *recorder) await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(waitTimeout)
	for !cond() {
		select {
		case <-r.changed:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// faultyStore wraps a store and fails chosen operations with chosen errors.
type faultyStore struct {
	stores.Store
	mu     sync.Mutex
	fails  map[string]error // op -> error returned instead of calling Store
	times  map[string]int   // op -> how many more calls fail; absent: every one
	result []byte           // when set, what Complete stores instead of its result
}

// completeWith makes Complete store result, whatever it is given: a record
// as another writer of the store left it.
func (f *faultyStore) completeWith(result []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.result = result
}

func newFaultyStore(t *testing.T) *faultyStore {
	return &faultyStore{Store: newMemory(t), fails: map[string]error{}, times: map[string]int{}}
}

func (f *faultyStore) fail(op string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fails[op] = err
}

// failTimes makes the next n calls of op fail with err, and the calls
// after them succeed.
func (f *faultyStore) failTimes(op string, err error, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fails[op], f.times[op] = err, n
}

func (f *faultyStore) injected(op string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.fails[op]
	if n, ok := f.times[op]; ok {
		if n <= 1 {
			delete(f.fails, op)
			delete(f.times, op)
		} else {
			f.times[op] = n - 1
		}
	}
	return err
}

func (f *faultyStore) Claim(ctx context.Context, key string, fp []byte, lease time.Duration) (stores.Claim, error) {
	if err := f.injected("claim"); err != nil {
		return stores.Claim{}, err
	}
	return f.Store.Claim(ctx, key, fp, lease)
}

func (f *faultyStore) Complete(ctx context.Context, key string, t stores.Token, v []byte, ttl time.Duration) error {
	if err := f.injected("complete"); err != nil {
		return err
	}
	f.mu.Lock()
	if f.result != nil {
		v = f.result
	}
	f.mu.Unlock()
	return f.Store.Complete(ctx, key, t, v, ttl)
}

func (f *faultyStore) Release(ctx context.Context, key string, t stores.Token) error {
	if err := f.injected("release"); err != nil {
		return err
	}
	return f.Store.Release(ctx, key, t)
}

func (f *faultyStore) Extend(ctx context.Context, key string, t stores.Token, lease time.Duration) (time.Time, error) {
	if err := f.injected("extend"); err != nil {
		return time.Time{}, err
	}
	return f.Store.Extend(ctx, key, t, lease)
}
