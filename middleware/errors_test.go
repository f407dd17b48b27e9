package middleware

import (
	"errors"
	"fmt"
	"testing"

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
		{fmt.Errorf("key %q: %w", "k", ErrFingerprintMismatch), true},
		{ErrNoKey, true},
		{ErrUnreadableResult, true},
		{errOther, false},
		{ErrInProgress, false},
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
