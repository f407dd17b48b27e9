package consume

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
)

// A failed attempt under a timeout leaves the timeout's cancelled context
// on the message; KeepContext hands the middleware outside it (the poison
// queue, whose publisher may honour the context) the message's own live
// context again.
func TestKeepContextRestoresTheContextATimeoutCancelled(t *testing.T) {
	errFail := errors.New("permanent failure")
	handler := func(*message.Message) ([]*message.Message, error) { return nil, errFail }
	for _, c := range []struct {
		name      string
		chain     message.HandlerFunc
		wantAlive bool
	}{
		{"without KeepContext", middleware.Timeout(time.Minute)(handler), false},
		{"with KeepContext", KeepContext(middleware.Timeout(time.Minute)(handler)), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			type key struct{}
			orig := context.WithValue(context.Background(), key{}, "delivery")
			msg := message.NewMessage("msg-1", nil)
			msg.SetContext(orig)
			if _, err := c.chain(msg); !errors.Is(err, errFail) {
				t.Fatalf("chain: %v, want %v", err, errFail)
			}
			alive := msg.Context().Err() == nil
			if alive != c.wantAlive {
				t.Fatalf("the message's context after the chain: err %v, want alive=%v", msg.Context().Err(), c.wantAlive)
			}
			if c.wantAlive && msg.Context() != orig {
				t.Error("the message's context is not the one it came with")
			}
		})
	}
}
