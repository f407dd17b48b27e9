package consume_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/onceflow/onceflow/middleware/consume"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/stores/memory"
)

// The receiver sits innermost, right around the handler. Permanent errors
// (a fingerprint mismatch) skip the retry and go to the poison queue.
// [consume.Install] builds this order, with KeepContext and
// OutliveClose, in one call.
func ExampleMiddleware() {
	store := memory.New(memory.Config{})
	defer func() { _ = store.Close() }()
	r, err := receiver.New(receiver.Config{Store: store})
	if err != nil {
		panic(err)
	}
	pubSub := gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{})
	poison, err := middleware.PoisonQueueWithFilter(pubSub, "poison", consume.Permanent)
	if err != nil {
		panic(err)
	}
	router, err := message.NewRouter(message.RouterConfig{}, watermill.NopLogger{})
	if err != nil {
		panic(err)
	}
	handlerTimeout := 10 * time.Second // must stay below r.Lease()
	// Outermost first: recoverer -> poison queue -> retry -> timeout -> receiver -> handler.
	router.AddMiddleware(
		middleware.Recoverer,
		poison,
		middleware.Retry{
			MaxRetries:          3,
			InitialInterval:     100 * time.Millisecond,
			Multiplier:          2,
			ShouldRetry:         func(p middleware.RetryParams) bool { return !consume.Permanent(p.Err) },
			ResetContextOnRetry: true, // else each retry inherits the timed-out context
		}.Middleware,
		middleware.Timeout(handlerTimeout),
		consume.Middleware(r),
	)
	charges := make(chan string, 2)
	router.AddConsumerHandler("charge", "charges.requested", pubSub, func(msg *message.Message) error {
		charges <- string(msg.Payload) // charge once
		return nil
	})
	go func() { _ = router.Run(context.Background()) }()
	defer func() { _ = router.Close() }()
	<-router.Running()

	for range 2 { // the broker delivers the payment twice, under one idempotency key
		msg := message.NewMessage(watermill.NewUUID(), []byte(`{"payment_id":"pay-1"}`))
		msg.Metadata.Set("idempotency_key", "pay-1")
		if err := pubSub.Publish("charges.requested", msg); err != nil {
			panic(err)
		}
	}
	fmt.Println("charged:", <-charges)
	select {
	case p := <-charges:
		fmt.Println("charged again:", p)
	case <-time.After(200 * time.Millisecond):
		fmt.Println("the copy was a duplicate")
	}
	// Output:
	// charged: {"payment_id":"pay-1"}
	// the copy was a duplicate
}
