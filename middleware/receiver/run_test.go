package receiver_test

import (
	"context"
	"errors"
	"testing"

	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// processedNext checks that the key is free again: the next Execute runs fn.
func processedNext(t *testing.T, r *receiver.Receiver) {
	t.Helper()
	res, err := r.Execute(context.Background(), testScope, testKey, fingerprint,
		func(context.Context) ([]byte, error) { return []byte("second"), nil })
	if err != nil || res.Outcome != receiver.OutcomeProcessed {
		t.Fatalf("next Execute = %q, %v; want processed: the claim was not released", res.Outcome, err)
	}
}

func TestExecuteReleasesOnError(t *testing.T) {
	r, rec := receivertest.NewReceiver(t, receiver.Config{})
	_, err := r.Execute(context.Background(), testScope, testKey, fingerprint,
		func(context.Context) ([]byte, error) { return nil, errHandler })
	if !errors.Is(err, errHandler) {
		t.Fatalf("err = %v, want the handler's error", err)
	}
	processedNext(t, r)
	if rec.OpCount("release") != 1 {
		t.Fatalf("releases = %d, want 1", rec.OpCount("release"))
	}
}

func TestExecuteReleasesOnPanic(t *testing.T) {
	r, rec := receivertest.NewReceiver(t, receiver.Config{})
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Fatalf("recovered %v, want the handler's panic to go on", p)
			}
		}()
		_, _ = r.Execute(context.Background(), testScope, testKey, fingerprint,
			func(context.Context) ([]byte, error) { panic("boom") })
		t.Fatal("Execute returned instead of panicking")
	}()
	if rec.Count(receiver.OutcomeFailed) != 1 {
		t.Fatalf("outcomes = %v, want one failed", rec.Outcomes())
	}
	processedNext(t, r)
}

// A handler cancelled by its caller (a timeout, a shutdown) still releases
// its claim, so the redelivery does not wait for the lease to end.
func TestExecuteReleasesWhenCallerCancelled(t *testing.T) {
	r, _ := receivertest.NewReceiver(t, receiver.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	_, err := r.Execute(ctx, testScope, testKey, fingerprint, func(ctx context.Context) ([]byte, error) {
		cancel()
		<-ctx.Done()
		return nil, ctx.Err()
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	processedNext(t, r)
}

// A handler that finished just as its caller gave up still records its
// effect: Complete does not use the cancelled context.
func TestExecuteCompletesWhenCallerCancelled(t *testing.T) {
	r, _ := receivertest.NewReceiver(t, receiver.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	res, err := r.Execute(ctx, testScope, testKey, fingerprint, func(context.Context) ([]byte, error) {
		cancel()
		return []byte("done"), nil
	})
	if err != nil || res.Outcome != receiver.OutcomeProcessed {
		t.Fatalf("Execute = %q, %v; want processed", res.Outcome, err)
	}
	dup, err := r.Execute(context.Background(), testScope, testKey, fingerprint, func(context.Context) ([]byte, error) {
		t.Error("fn ran again")
		return nil, nil
	})
	if err != nil || dup.Outcome != receiver.OutcomeDuplicate || string(dup.Value) != "done" {
		t.Fatalf("second Execute = %q %q, %v; want duplicate \"done\"", dup.Outcome, dup.Value, err)
	}
}
