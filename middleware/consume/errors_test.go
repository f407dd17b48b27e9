package consume

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/stores"
)

// A domain's sentinels join the receiver's own permanent errors, wrapped
// or not; every other error stays retryable.
func TestPermanentErrorsAddsTheDomainsSentinels(t *testing.T) {
	errMalformed := errors.New("malformed message")
	errOther := errors.New("database unavailable")
	permanent := PermanentErrors(errMalformed)
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("decoding: %w", errMalformed), true},
		{fmt.Errorf("key %q: %w", "k", receiver.ErrFingerprintMismatch), true},
		{receiver.ErrNoKey, true},
		{receiver.ErrUnreadableResult, true},
		{errOther, false},
		{receiver.ErrInProgress, false},
		{fmt.Errorf("claiming key %q: %w", "k", stores.ErrFull), false}, // retried until records expire
		{nil, false},
	} {
		if got := permanent(c.err); got != c.want {
			t.Errorf("PermanentErrors(errMalformed)(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	if PermanentErrors()(errMalformed) {
		t.Error("PermanentErrors() classifies a domain error it was not given as permanent")
	}
}

// What the receiver returns for a reused key and for a missing key or
// scope is permanent, as the errors Execute wraps.
func TestReceiverErrorsArePermanent(t *testing.T) {
	r, _ := receivertest.NewReceiver(t, receiver.Config{})
	ok := func(context.Context) ([]byte, error) { return nil, nil }
	if _, err := r.Execute(context.Background(), "scope", "key", []byte("fingerprint"), ok); err != nil {
		t.Fatal(err)
	}
	_, err := r.Execute(context.Background(), "scope", "key", []byte("another fingerprint"), ok)
	if !errors.Is(err, receiver.ErrFingerprintMismatch) || !Permanent(err) {
		t.Fatalf("err = %v, want a permanent ErrFingerprintMismatch", err)
	}
	for _, sk := range [][2]string{{"", "key"}, {"scope", ""}} {
		_, err := r.Execute(context.Background(), sk[0], sk[1], []byte("fingerprint"), ok)
		if !errors.Is(err, receiver.ErrNoKey) || !Permanent(err) {
			t.Errorf("Execute(%q, %q) error = %v, want permanent ErrNoKey", sk[0], sk[1], err)
		}
	}
}
