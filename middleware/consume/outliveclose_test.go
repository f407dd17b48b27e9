package consume

import (
	"context"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
)

// A handler in flight when the router closes runs to its end on a live
// context: Watermill cancels the message's context as Close starts, and
// OutliveClose keeps that cancellation from the attempt.
func TestOutliveCloseKeepsAnAttemptInFlightAlive(t *testing.T) {
	pubsub := gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{})
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: 10 * time.Second}, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	routerCtx := make(chan context.Context, 1) // the context the router gave the message
	router.AddMiddleware(func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			routerCtx <- msg.Context()
			return h(msg)
		}
	}, OutliveClose)
	handlerErr := make(chan error, 1)
	started := make(chan struct{})
	router.AddConsumerHandler("slow", "topic", pubsub, func(msg *message.Message) error {
		close(started)
		orig := <-routerCtx
		<-orig.Done() // the router has begun to close and cancelled it
		handlerErr <- msg.Context().Err()
		return nil
	})
	runDone := make(chan error, 1)
	go func() { runDone <- router.Run(context.Background()) }()
	<-router.Running()
	if err := pubsub.Publish("topic", message.NewMessage(watermill.NewUUID(), []byte("{}"))); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := router.Close(); err != nil {
		t.Fatalf("closing the router: %v", err)
	}
	select {
	case err := <-handlerErr:
		if err != nil {
			t.Errorf("handler's context after the router closed: %v, want alive", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the router's context was never cancelled: the test proves nothing")
	}
	if err := <-runDone; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// OutliveClose hands the middlewares outside it the message's own context
// back, so that the retry outside sees the router's cancellation.
func TestOutliveCloseRestoresTheMessagesContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	msg := message.NewMessage("msg-1", nil)
	msg.SetContext(ctx)
	cancel()
	var inside error
	_, _ = OutliveClose(func(msg *message.Message) ([]*message.Message, error) {
		inside = msg.Context().Err()
		return nil, nil
	})(msg)
	if inside != nil {
		t.Errorf("the attempt's context: %v, want alive", inside)
	}
	if msg.Context() != ctx {
		t.Error("after OutliveClose the message does not have its own context back")
	}
}
