package receivertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/onceflow/onceflow/stores"
)

// FaultyStore wraps a memory store and fails chosen operations ("claim",
// "complete", "release", "extend") with chosen errors.
type FaultyStore struct {
	stores.Store
	mu     sync.Mutex
	fails  map[string]error // op -> error returned instead of calling Store
	times  map[string]int   // op -> how many more calls fail; absent: every one
	result []byte           // when set, what Complete stores instead of its result
}

var _ stores.Store = (*FaultyStore)(nil)

// NewFaultyStore is a FaultyStore on a fresh memory store that fails
// nothing yet.
func NewFaultyStore(t testing.TB) *FaultyStore {
	return &FaultyStore{Store: NewMemory(t), fails: map[string]error{}, times: map[string]int{}}
}

// CompleteWith makes Complete store result, whatever it is given: a record
// as another writer of the store left it.
func (f *FaultyStore) CompleteWith(result []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.result = result
}

// Fail makes every call of op fail with err.
func (f *FaultyStore) Fail(op string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fails[op] = err
}

// FailTimes makes the next n calls of op fail with err, and the calls
// after them succeed.
func (f *FaultyStore) FailTimes(op string, err error, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fails[op], f.times[op] = err, n
}

func (f *FaultyStore) injected(op string) error {
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

// Claim fails as told, or claims.
func (f *FaultyStore) Claim(ctx context.Context, key string, fp []byte, lease time.Duration) (stores.Claim, error) {
	if err := f.injected("claim"); err != nil {
		return stores.Claim{}, err
	}
	return f.Store.Claim(ctx, key, fp, lease)
}

// Complete fails as told, or completes (with CompleteWith's result, if
// set).
func (f *FaultyStore) Complete(ctx context.Context, key string, t stores.Token, v []byte, ttl time.Duration) error {
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

// Release fails as told, or releases.
func (f *FaultyStore) Release(ctx context.Context, key string, t stores.Token) error {
	if err := f.injected("release"); err != nil {
		return err
	}
	return f.Store.Release(ctx, key, t)
}

// Extend fails as told, or extends.
func (f *FaultyStore) Extend(ctx context.Context, key string, t stores.Token, lease time.Duration) (time.Time, error) {
	if err := f.injected("extend"); err != nil {
		return time.Time{}, err
	}
	return f.Store.Extend(ctx, key, t, lease)
}
