package receiver_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
)

func TestTransactionModeRollsBackAFailedEffect(t *testing.T) {
	r, rec, count := receivertest.NewTxReceiver(t, false)
	ctx := t.Context()
	boom := errors.New("boom")
	_, err := r.Execute(ctx, "h", "k", []byte("fp"), func(ctx context.Context) ([]byte, error) {
		if err := receivertest.Effect(ctx); err != nil {
			return nil, err
		}
		return nil, boom
	})
	if !errors.Is(err, boom) || count() != 0 || rec.Count(receiver.OutcomeFailed) != 1 {
		t.Fatalf("after a failure: err %v, %d effects, %d failed; want boom, 0, 1", err, count(), rec.Count(receiver.OutcomeFailed))
	}

	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not go on")
			}
		}()
		_, _ = r.Execute(ctx, "h", "k", []byte("fp"), func(ctx context.Context) ([]byte, error) {
			if err := receivertest.Effect(ctx); err != nil {
				return nil, err
			}
			panic("handler panicked")
		})
	}()
	if count() != 0 {
		t.Fatalf("%d effects after a panic, want 0", count())
	}

	// The key is free again: the redelivery runs, once.
	for range 2 {
		if _, err := r.Execute(ctx, "h", "k", []byte("fp"), func(ctx context.Context) ([]byte, error) {
			return []byte("ok"), receivertest.Effect(ctx)
		}); err != nil {
			t.Fatal(err)
		}
	}
	if count() != 1 || rec.Count(receiver.OutcomeProcessed) != 1 || rec.Count(receiver.OutcomeDuplicate) != 1 {
		t.Fatalf("%d effects, %d processed, %d duplicates; want 1, 1, 1",
			count(), rec.Count(receiver.OutcomeProcessed), rec.Count(receiver.OutcomeDuplicate))
	}
}

func TestTransactionModeDuplicateWaitsForTheFirst(t *testing.T) {
	r, _, count := receivertest.NewTxReceiver(t, false)
	ctx := t.Context()
	entered, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := r.Execute(ctx, "h", "k", []byte("fp"), func(ctx context.Context) ([]byte, error) {
			close(entered)
			<-release
			return []byte("first"), receivertest.Effect(ctx)
		})
		first <- err
	}()
	<-entered
	second := make(chan receiver.Result, 1)
	go func() {
		res, err := r.Execute(ctx, "h", "k", []byte("fp"), func(ctx context.Context) ([]byte, error) {
			return []byte("second"), receivertest.Effect(ctx)
		})
		if err != nil {
			t.Errorf("duplicate: %v", err)
		}
		second <- res
	}()
	select {
	case res := <-second:
		t.Fatalf("the duplicate returned %v while the first was still running", res.Outcome)
	case <-time.After(200 * time.Millisecond): // it is blocked on the row
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-second:
		if res.Outcome != receiver.OutcomeDuplicate || string(res.Value) != "first" {
			t.Fatalf("duplicate = %v %q, want duplicate with the first result", res.Outcome, res.Value)
		}
	case <-time.After(receivertest.WaitTimeout):
		t.Fatal("the duplicate never returned")
	}
	if count() != 1 {
		t.Fatalf("%d effects, want 1", count())
	}
}
