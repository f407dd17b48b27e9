// Package receivertest is the test machinery of the receiver and its
// faces: a receiver on a fresh memory store that counts what it observes
// ([NewReceiver], [Recorder]), a store that fails on demand
// ([FaultyStore]), a receiver in transaction mode on PostgreSQL
// ([NewTxReceiver]), and what the benchmarks share ([NewBenchReceiver],
// [HandlerContext]). Waiting on an event is bounded by [WaitTimeout], and
// reaching it is a failure, never the expected path.
package receivertest

import (
	"context"
	"log/slog"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/stores/memory"
)

// WaitTimeout bounds every wait on an event in the receiver's tests.
const WaitTimeout = 10 * time.Second

// NewMemory is a memory store, closed when the test ends.
func NewMemory(t testing.TB) *memory.Store {
	t.Helper()
	s := memory.New(memory.Config{})
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// NewReceiver makes a receiver on cfg, with a fresh memory store and a
// [Recorder] unless cfg has a store or observer; the recorder is nil when
// cfg has another observer. Logs are discarded.
func NewReceiver(t testing.TB, cfg receiver.Config) (*receiver.Receiver, *Recorder) {
	t.Helper()
	if cfg.Store == nil {
		cfg.Store = NewMemory(t)
	}
	if cfg.Observer == nil {
		cfg.Observer = NewRecorder()
	}
	rec, _ := cfg.Observer.(*Recorder)
	cfg.Logger = slog.New(slog.DiscardHandler)
	r, err := receiver.New(cfg)
	if err != nil {
		t.Fatalf("receiver.New: %v", err)
	}
	return r, rec
}

// EffectKey is the effect key named name of a run of key in scope: what
// [receiver.EffectKey] answers in the function that [receiver.Receiver.Execute]
// runs for them, on any store.
func EffectKey(t testing.TB, scope, key, name string) string {
	t.Helper()
	r, _ := NewReceiver(t, receiver.Config{})
	var k string
	_, err := r.Execute(context.Background(), scope, key, nil, func(ctx context.Context) ([]byte, error) {
		var ok bool
		if k, ok = receiver.EffectKey(ctx, name); !ok {
			t.Fatalf("no effect key in the run of %s/%s", scope, key)
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// AsJSONString is s as a JSON string holds it: each byte that is not part
// of valid UTF-8 becomes U+FFFD, as ranging over s does. The faces store
// their results as JSON, so this is what a stored string reads back as.
func AsJSONString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string([]rune(s))
}
