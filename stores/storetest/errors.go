package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/onceflow/onceflow/stores"
)

func testEmptyKeyIsInvalid(t *testing.T, h Harness) {
	s := h.New(t)
	_, err := s.Claim(ctx(t), "", fingerprint, longLease)
	wantErr(t, "Claim(\"\")", err, stores.ErrInvalidKey)
	wantErr(t, "Complete(\"\")", s.Complete(ctx(t), "", stores.NewToken(), nil, longTTL), stores.ErrInvalidKey)
	wantErr(t, "Release(\"\")", s.Release(ctx(t), "", stores.NewToken()), stores.ErrInvalidKey)
	_, err = s.Extend(ctx(t), "", stores.NewToken(), longLease)
	wantErr(t, "Extend(\"\")", err, stores.ErrInvalidKey)
}

func testInvalidArguments(t *testing.T, h Harness) {
	s := h.New(t)
	k := key(t, "k")
	for _, lease := range []time.Duration{0, -time.Second} {
		_, err := s.Claim(ctx(t), k, fingerprint, lease)
		wantErr(t, "Claim with lease "+lease.String(), err, stores.ErrInvalidArgument)
	}
	owner := mustAcquire(t, s, k, longLease)
	wantErr(t, "Complete with ttl 0", s.Complete(ctx(t), k, owner.Token, nil, 0), stores.ErrInvalidArgument)
	wantErr(t, "Complete with an empty token", s.Complete(ctx(t), k, "", nil, longTTL), stores.ErrInvalidArgument)
	wantErr(t, "Release with an empty token", s.Release(ctx(t), k, ""), stores.ErrInvalidArgument)
	_, err := s.Extend(ctx(t), k, owner.Token, 0)
	wantErr(t, "Extend with lease 0", err, stores.ErrInvalidArgument)

	// Rejected calls changed nothing: the owner still holds the key.
	mustComplete(t, s, k, owner.Token, []byte("ok"))
}

func testCancelledContextChangesNothing(t *testing.T, h Harness) {
	s := h.New(t)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()

	k := key(t, "k")
	_, err := s.Claim(cancelled, k, fingerprint, longLease)
	wantErr(t, "Claim with a cancelled context", err, context.Canceled)
	owner := mustAcquire(t, s, k, longLease) // the cancelled claim took nothing

	wantErr(t, "Complete with a cancelled context", s.Complete(cancelled, k, owner.Token, []byte("x"), longTTL), context.Canceled)
	wantErr(t, "Release with a cancelled context", s.Release(cancelled, k, owner.Token), context.Canceled)
	_, err = s.Extend(cancelled, k, owner.Token, longLease)
	wantErr(t, "Extend with a cancelled context", err, context.Canceled)

	wantStatus(t, mustClaim(t, s, k, fingerprint, longLease), stores.InProgress)
	mustComplete(t, s, k, owner.Token, []byte("done"))
}

func testBackendDownIsUnavailable(t *testing.T, h Harness) {
	s := h.Unavailable(t)
	k := key(t, "k")
	token := stores.NewToken()

	c, err := s.Claim(ctx(t), k, fingerprint, longLease)
	wantUnavailable(t, "Claim", err)
	if c.Status == stores.InProgress || c.Status == stores.Acquired {
		t.Fatalf("Claim on a down backend reported %v", c.Status)
	}
	wantUnavailable(t, "Complete", s.Complete(ctx(t), k, token, nil, longTTL))
	wantUnavailable(t, "Release", s.Release(ctx(t), k, token))
	_, err = s.Extend(ctx(t), k, token, longLease)
	wantUnavailable(t, "Extend", err)
}

// wantUnavailable checks that an outage is reported as one: matching
// ErrUnavailable, carrying a cause, and not to be mistaken for a lease or
// contention outcome.
func wantUnavailable(t *testing.T, op string, err error) {
	t.Helper()
	if !errors.Is(err, stores.ErrUnavailable) {
		t.Fatalf("%s on a down backend: error %v, want ErrUnavailable", op, err)
	}
	var ue *stores.UnavailableError
	if !errors.As(err, &ue) || ue.Err == nil {
		t.Fatalf("%s on a down backend: %v does not wrap the driver's cause", op, err)
	}
	if errors.Is(err, stores.ErrLeaseLost) {
		t.Fatalf("%s on a down backend: %v also matches ErrLeaseLost", op, err)
	}
}
