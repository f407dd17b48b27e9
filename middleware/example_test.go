package middleware_test

import (
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	wmmw "github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/onceflow/onceflow/middleware"
	"github.com/onceflow/onceflow/stores/memory"
)

// The receiver sits innermost, right around the handler. Permanent errors
// (a fingerprint mismatch) skip the retry and go to the poison queue.
func ExampleReceiver_Middleware() {
	store := memory.New(memory.Config{})
	defer func() { _ = store.Close() }()
	receiver, err := middleware.NewReceiver(middleware.Config{Store: store})
	if err != nil {
		panic(err)
	}
	pubSub := gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{})
	poison, err := wmmw.PoisonQueueWithFilter(pubSub, "poison", middleware.Permanent)
	if err != nil {
		panic(err)
	}
	router, err := message.NewRouter(message.RouterConfig{}, watermill.NopLogger{})
	if err != nil {
		panic(err)
	}
	handlerTimeout := 10 * time.Second // must stay below receiver.Lease()
	// Outermost first: recoverer -> poison queue -> retry -> timeout -> receiver -> handler.
	router.AddMiddleware(
		wmmw.Recoverer,
		poison,
		wmmw.Retry{
			MaxRetries:          3,
			InitialInterval:     100 * time.Millisecond,
			Multiplier:          2,
			ShouldRetry:         func(p wmmw.RetryParams) bool { return !middleware.Permanent(p.Err) },
			ResetContextOnRetry: true, // else each retry inherits the timed-out context
		}.Middleware,
		wmmw.Timeout(handlerTimeout),
		receiver.Middleware(),
	)
	router.AddConsumerHandler("charge_payment", "payments.requested", pubSub, func(msg *message.Message) error {
		return nil // charge once
	})
}
