package middleware

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/onceflow/onceflow/stores"
)

const shortLease = 200 * time.Millisecond

func TestHeartbeatKeepsLeaseAlive(t *testing.T) {
	t.Parallel()
	r, rec := newReceiver(t, Config{Lease: shortLease})
	res, err := r.Execute(context.Background(), testScope, testKey, fingerprint, func(ctx context.Context) ([]byte, error) {
		// Nine extends at Lease/3 span three lease periods: without them
		// the key would have been free to take over twice.
		rec.await(t, "nine extends", func() bool { return rec.opCount("extend") >= 9 })
		c, err := r.cfg.Store.Claim(context.Background(), storeKey, fingerprint, time.Minute)
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
	if err != nil || res.Outcome != OutcomeProcessed {
		t.Fatalf("Execute = %q, %v; want processed", res.Outcome, err)
	}
	if got, calls := rec.extensions(ExtensionExtended), rec.opCount("extend"); got != calls || got < 9 {
		t.Errorf("%d extensions observed as extended, want every one of the %d extend calls", got, calls)
	}
}

// Fencing: once the store says the token lost the key, the function's
// context is cancelled with stores.ErrLeaseLost as its cause.
func TestLeaseLostCancelsFunction(t *testing.T) {
	t.Parallel()
	store := newFaultyStore(t)
	store.fail("extend", stores.ErrLeaseLost)
	r, rec := newReceiver(t, Config{Store: store, Lease: shortLease})
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
	if res.Outcome != OutcomeLeaseLost || rec.count(OutcomeLeaseLost) != 1 || rec.total() != 1 {
		t.Fatalf("outcome %q, observed %v; want one lease_lost", res.Outcome, rec.outcomes)
	}
	if n := rec.extensions(ExtensionLost); n != 1 {
		t.Errorf("%d extensions observed as lost, want 1", n)
	}
}

// A store that cannot be reached cannot confirm the lease either: once the
// last extended lease has run out, the function is fenced off.
func TestUnreachableStoreEndsLease(t *testing.T) {
	t.Parallel()
	store := newFaultyStore(t)
	store.fail("extend", stores.Unavailable("extend", errDriver))
	r, rec := newReceiver(t, Config{Store: store, Lease: shortLease})
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
	if failed, extended := rec.extensions(ExtensionFailed), rec.extensions(ExtensionExtended); failed < 1 || extended != 0 {
		t.Errorf("extensions observed: %d failed, %d extended; want failures only", failed, extended)
	}
}

// The beats keep exactly the heartbeats added and not yet removed, whatever
// the order of removal.
func TestBeatsListsTheHeartbeatsInFlight(t *testing.T) {
	inFlight := func(b *beats) []*heartbeat {
		var hs []*heartbeat
		for h := b.first; h != nil; h = h.next {
			hs = append(hs, h)
		}
		return hs
	}
	b := newBeats(time.Hour)
	defer func() {
		if b.timer != nil {
			b.timer.Stop()
		}
	}()
	hs := make([]*heartbeat, 4)
	for i := range hs {
		hs[i] = &heartbeat{}
		b.add(hs[i], time.Now())
	}
	for _, step := range []struct {
		remove int
		want   []int
	}{{2, []int{3, 1, 0}}, {3, []int{1, 0}}, {0, []int{1}}, {1, nil}} {
		b.remove(hs[step.remove])
		got := inFlight(b)
		if len(got) != len(step.want) {
			t.Fatalf("after removing %d: %d in flight, want %v", step.remove, len(got), step.want)
		}
		for i, w := range step.want {
			if got[i] != hs[w] {
				t.Fatalf("after removing %d: in flight[%d] is not heartbeat %d", step.remove, i, w)
			}
		}
	}
}
