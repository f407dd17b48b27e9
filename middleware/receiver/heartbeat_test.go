package receiver_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/stores"
)

const shortLease = 200 * time.Millisecond

func TestHeartbeatKeepsLeaseAlive(t *testing.T) {
	t.Parallel()
	r, rec := receivertest.NewReceiver(t, receiver.Config{Lease: shortLease})
	res, err := r.Execute(context.Background(), testScope, testKey, fingerprint, func(ctx context.Context) ([]byte, error) {
		// Nine extends at Lease/3 span three lease periods: without them
		// the key would have been free to take over twice.
		rec.Await(t, "nine extends", func() bool { return rec.OpCount("extend") >= 9 })
		c, err := r.Config().Store.Claim(context.Background(), storeKey, fingerprint, time.Minute)
		if err != nil {
			return nil, err
		}
		if c.Status != stores.InProgress {
			t.Errorf("competing claim got %v after three lease periods, want in_progress", c.Status)
		}
		if ctx.Err() != nil {
			t.Errorf("fn's context ended: %v", context.Cause(ctx))
		}
		return []byte("slow result"), nil
	})
	if err != nil || res.Outcome != receiver.OutcomeProcessed {
		t.Fatalf("Execute = %q, %v; want processed", res.Outcome, err)
	}
	if got, calls := rec.Extensions(receiver.ExtensionExtended), rec.OpCount("extend"); got != calls || got < 9 {
		t.Errorf("%d extensions observed as extended, want every one of the %d extend calls", got, calls)
	}
}

// Fencing: once the store says the token lost the key, the function's
// context is cancelled with stores.ErrLeaseLost as its cause.
func TestLeaseLostCancelsFunction(t *testing.T) {
	t.Parallel()
	store := receivertest.NewFaultyStore(t)
	store.Fail("extend", stores.ErrLeaseLost)
	r, rec := receivertest.NewReceiver(t, receiver.Config{Store: store, Lease: shortLease})
	res, err := r.Execute(context.Background(), testScope, testKey, fingerprint, func(ctx context.Context) ([]byte, error) {
		<-ctx.Done()
		if !errors.Is(context.Cause(ctx), stores.ErrLeaseLost) {
			t.Errorf("cause = %v, want stores.ErrLeaseLost", context.Cause(ctx))
		}
		return nil, ctx.Err()
	})
	if !errors.Is(err, stores.ErrLeaseLost) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want it to match stores.ErrLeaseLost and the function's context.Canceled", err)
	}
	if res.Outcome != receiver.OutcomeLeaseLost || rec.Count(receiver.OutcomeLeaseLost) != 1 || rec.Total() != 1 {
		t.Fatalf("outcome %q, observed %v; want one lease_lost", res.Outcome, rec.Outcomes())
	}
	if n := rec.Extensions(receiver.ExtensionLost); n != 1 {
		t.Errorf("%d extensions observed as lost, want 1", n)
	}
}

// A store that cannot be reached cannot confirm the lease either: once the
// last extended lease has run out, the function is fenced off.
func TestUnreachableStoreEndsLease(t *testing.T) {
	t.Parallel()
	store := receivertest.NewFaultyStore(t)
	store.Fail("extend", stores.Unavailable("extend", errDriver))
	r, rec := receivertest.NewReceiver(t, receiver.Config{Store: store, Lease: shortLease})
	begun := time.Now()
	_, err := r.Execute(context.Background(), testScope, testKey, fingerprint, func(ctx context.Context) ([]byte, error) {
		<-ctx.Done()
		return nil, context.Cause(ctx)
	})
	if !errors.Is(err, stores.ErrLeaseLost) || !errors.Is(err, stores.ErrUnavailable) {
		t.Fatalf("err = %v, want stores.ErrLeaseLost caused by stores.ErrUnavailable", err)
	}
	if held := time.Since(begun); held < shortLease {
		t.Fatalf("fenced after %v, before the lease of %v ran out", held, shortLease)
	}
	if failed, extended := rec.Extensions(receiver.ExtensionFailed), rec.Extensions(receiver.ExtensionExtended); failed < 1 || extended != 0 {
		t.Errorf("extensions observed: %d failed, %d extended; want failures only", failed, extended)
	}
}
