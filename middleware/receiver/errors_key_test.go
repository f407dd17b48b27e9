package receiver_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// A key of any size reused with another payload yields an error of bounded
// size that names the key by its stored form: the error becomes the poison
// topic's reason_poisoned header, and a 100 KiB key copied into it made the
// poisoned message too large for a RabbitMQ header frame, so it was
// redelivered forever instead of being parked.
func TestMismatchErrorShowsLongKeyHashed(t *testing.T) {
	r, _ := receivertest.NewReceiver(t, receiver.Config{})
	ctx := context.Background()
	ok := func(context.Context) ([]byte, error) { return []byte("done"), nil }
	for _, key := range []string{strings.Repeat("k", 100<<10), "bin\xff\xfe"} {
		if _, err := r.Execute(ctx, "charge", key, []byte("print-a"), ok); err != nil {
			t.Fatalf("first use: %v", err)
		}
		_, err := r.Execute(ctx, "charge", key, []byte("print-b"), ok)
		if !errors.Is(err, receiver.ErrFingerprintMismatch) {
			t.Fatalf("reuse: %v, want ErrFingerprintMismatch", err)
		}
		if msg := err.Error(); len(msg) > 512 || !strings.Contains(msg, "sha256:") {
			t.Errorf("reuse error is %d bytes, want at most 512 naming the hashed key: %.200q", len(msg), msg)
		}
	}
}

// A short readable key is shown as it is.
func TestMismatchErrorShowsShortKey(t *testing.T) {
	r, _ := receivertest.NewReceiver(t, receiver.Config{})
	ctx := context.Background()
	ok := func(context.Context) ([]byte, error) { return nil, nil }
	if _, err := r.Execute(ctx, "charge", "pay-1", []byte("a"), ok); err != nil {
		t.Fatal(err)
	}
	_, err := r.Execute(ctx, "charge", "pay-1", []byte("b"), ok)
	if err == nil || !strings.Contains(err.Error(), `"charge:pay-1"`) {
		t.Errorf("reuse error %v, want it to name key charge:pay-1", err)
	}
}
