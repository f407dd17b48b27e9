package receiver_test

import (
	"context"
	"testing"
	"time"

	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// waiter starts an Execute under the Wait policy and returns its result
// channel once the waiter has polled the held key at least twice.
func waiter(t *testing.T, r *receiver.Receiver, rec *receivertest.Recorder, fn func(context.Context) ([]byte, error)) <-chan receiver.Result {
	t.Helper()
	claimsBefore := rec.OpCount("claim")
	done := make(chan receiver.Result, 1)
	go func() {
		res, err := r.Execute(context.Background(), testScope, testKey, fingerprint, fn)
		if err != nil {
			t.Errorf("waiting Execute: %v", err)
		}
		done <- res
	}()
	rec.Await(t, "the waiter to poll", func() bool { return rec.OpCount("claim") >= claimsBefore+3 })
	return done
}

func TestWaitResolvesToDuplicate(t *testing.T) {
	r, rec := receivertest.NewReceiver(t, receiver.Config{OnInProgress: receiver.Wait, Wait: receivertest.WaitTimeout})
	started, finish := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := r.Execute(context.Background(), testScope, testKey, fingerprint, func(context.Context) ([]byte, error) {
			close(started)
			<-finish
			return []byte("first result"), nil
		})
		first <- err
	}()
	<-started
	second := waiter(t, r, rec, func(context.Context) ([]byte, error) {
		t.Error("the waiter ran fn although the first owner completed")
		return nil, nil
	})
	close(finish)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	res := <-second
	if res.Outcome != receiver.OutcomeDuplicate || string(res.Value) != "first result" {
		t.Fatalf("waiter got %q %q, want duplicate \"first result\"", res.Outcome, res.Value)
	}
}

func TestWaitResolvesToAcquiredAfterRelease(t *testing.T) {
	r, rec := receivertest.NewReceiver(t, receiver.Config{OnInProgress: receiver.Wait, Wait: receivertest.WaitTimeout})
	// Someone else holds the key, then gives it up (its handler failed).
	c, err := r.Config().Store.Claim(context.Background(), storeKey, fingerprint, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	second := waiter(t, r, rec, func(context.Context) ([]byte, error) { return []byte("mine"), nil })
	if err := r.Config().Store.Release(context.Background(), storeKey, c.Token); err != nil {
		t.Fatal(err)
	}
	if res := <-second; res.Outcome != receiver.OutcomeProcessed || string(res.Value) != "mine" {
		t.Fatalf("waiter got %q %q, want processed \"mine\"", res.Outcome, res.Value)
	}
}

func TestWaitStopsWithContext(t *testing.T) {
	r, rec := receivertest.NewReceiver(t, receiver.Config{OnInProgress: receiver.Wait, Wait: receivertest.WaitTimeout})
	holdKey(fingerprint)(t, r.Config().Store)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := r.Execute(ctx, testScope, testKey, fingerprint, func(context.Context) ([]byte, error) {
			t.Error("fn ran")
			return nil, nil
		})
		done <- err
	}()
	rec.Await(t, "the waiter to poll", func() bool { return rec.OpCount("claim") >= 2 })
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("err = %v, want context.Canceled as is", err)
	}
}
