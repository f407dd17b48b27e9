package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/onceflow/onceflow/domain"
)

// A handler in flight when the router closes runs to its end on a live
// context: Watermill cancels the message's context as Close starts, and
// outliveClose keeps that cancellation from the attempt.
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
	}, outliveClose)
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

// A route may not take the name of a handler the service registers itself:
// the router would refuse the second registration only when it runs.
func TestCheckRoutesRefusesTheServicesOwnNames(t *testing.T) {
	consume := func(*message.Message) error { return nil }
	for _, name := range []string{poisonLogHandler, outboxHandler} {
		err := checkRoutes(domain.Routes{{Name: name, Consumes: "in", Consume: consume}}, time.Minute)
		if err == nil || !strings.Contains(err.Error(), "the service's own handler") {
			t.Errorf("checkRoutes(route %q) = %v, want it refused", name, err)
		}
	}
	if err := checkRoutes(paymentRoutes(), time.Minute); err != nil {
		t.Errorf("checkRoutes(the payments routes) = %v", err)
	}
}

// A route's own timeout, like HANDLER_TIMEOUT, must end before the lease:
// otherwise a claim could expire while its handler still runs.
func TestCheckRoutesRefusesATimeoutTheLeaseDoesNotOutlive(t *testing.T) {
	consume := func(*message.Message) error { return nil }
	r := domain.Route{Name: "slow", Consumes: "in", Consume: consume, Timeout: time.Minute}
	if err := checkRoutes(domain.Routes{r}, time.Minute); err == nil || !strings.Contains(err.Error(), "must be shorter than DEDUP_LEASE=1m0s") {
		t.Errorf("checkRoutes(timeout 1m, lease 1m) = %v, want it refused", err)
	}
	if err := checkRoutes(domain.Routes{r}, 2*time.Minute); err != nil {
		t.Errorf("checkRoutes(timeout 1m, lease 2m) = %v", err)
	}
}
