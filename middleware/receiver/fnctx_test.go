package receiver

import (
	"context"
	"errors"
	"testing"

	"github.com/onceflow/onceflow/stores"
)

// fn's context reads as context.WithCancelCause(withToken(parent, token))
// would, whether or not anyone asked for Done before it ended.
func TestFnContext(t *testing.T) {
	for _, askDone := range []bool{false, true} {
		parent, cancelParent := context.WithCancel(context.Background())
		c := &fnContext{parent: parent, token: "t-1"}
		if askDone {
			_ = c.Done()
		}
		if tok, ok := TokenFromContext(c); !ok || tok != "t-1" {
			t.Fatalf("token = %q, %v", tok, ok)
		}
		if c.Err() != nil {
			t.Fatalf("Err before any cancellation: %v", c.Err())
		}
		cancelParent()
		<-c.Done()
		if !errors.Is(c.Err(), context.Canceled) {
			t.Fatalf("askDone=%v: Err after the parent ended = %v", askDone, c.Err())
		}
		c.release()
	}

	leased := &fnContext{parent: context.Background(), token: "t-2"}
	leased.cancel(stores.ErrLeaseLost)
	<-leased.Done()
	if !errors.Is(context.Cause(leased), stores.ErrLeaseLost) || !errors.Is(leased.Err(), context.Canceled) {
		t.Fatalf("after cancel: Err %v, cause %v", leased.Err(), context.Cause(leased))
	}
	leased.release()

	returned := &fnContext{parent: context.Background(), token: "t-3"}
	returned.release()
	if !errors.Is(returned.Err(), context.Canceled) {
		t.Fatalf("Err once fn returned = %v, want Canceled", returned.Err())
	}
	select {
	case <-returned.Done():
	default:
		t.Fatal("Done once fn returned is not closed")
	}
}
