package consume_test

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/onceflow/onceflow/middleware/consume"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/stores/memory"
)

// A plain Watermill service takes the receiver with a store, the receiver
// and one Install on its router. The broker delivers a payment twice; the
// handler charges it once.
func ExampleInstall() {
	store := memory.New(memory.Config{})
	defer func() { _ = store.Close() }()
	r, err := receiver.New(receiver.Config{Store: store})
	if err != nil {
		panic(err)
	}
	pubSub := gochannel.NewGoChannel(gochannel.Config{BlockPublishUntilSubscriberAck: true}, watermill.NopLogger{})
	router, err := message.NewRouter(message.RouterConfig{}, watermill.NopLogger{})
	if err != nil {
		panic(err)
	}
	err = consume.Install(router, consume.RouterConfig{Receiver: r, PoisonPublisher: pubSub})
	if err != nil {
		panic(err)
	}
	var charges atomic.Int32
	router.AddConsumerHandler("charge", "charges.requested", pubSub, func(msg *message.Message) error {
		charges.Add(1) // the side effect
		return nil
	})
	go func() { _ = router.Run(context.Background()) }()
	defer func() { _ = router.Close() }()
	<-router.Running()

	for range 2 { // the same payment, delivered twice
		msg := message.NewMessage(watermill.NewUUID(), []byte(`{"payment_id":"pay-1"}`))
		msg.Metadata.Set(consume.MetadataKey, "pay-1")
		if err := pubSub.Publish("charges.requested", msg); err != nil { // returns once acked
			panic(err)
		}
	}
	fmt.Println("charges:", charges.Load())
	// Output: charges: 1
}
