package consume_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/middleware/consume"
	"github.com/onceflow/onceflow/middleware/receiver"
	redisstore "github.com/onceflow/onceflow/stores/redis"
)

// A Watermill service that already retries its failures and parks what
// still fails takes the receiver with a store, the receiver and one
// Install on its router, and keeps its own retry and poison queue: they
// run outside the receiver, wherever they were added. The broker delivers
// a payment twice, and its first attempt fails; the handler charges it
// once.
func ExampleInstall() {
	// The service as it was.
	pubSub := gochannel.NewGoChannel(gochannel.Config{BlockPublishUntilSubscriberAck: true}, watermill.NopLogger{})
	router, err := message.NewRouter(message.RouterConfig{}, watermill.NopLogger{})
	if err != nil {
		panic(err)
	}
	poison, err := middleware.PoisonQueue(pubSub, "poison")
	if err != nil {
		panic(err)
	}
	router.AddMiddleware(poison, middleware.Retry{MaxRetries: 3, InitialInterval: 10 * time.Millisecond}.Middleware)
	var charges, attempts atomic.Int32
	router.AddConsumerHandler("charge", "payments.requested", pubSub, func(msg *message.Message) error {
		if attempts.Add(1) == 1 {
			return errors.New("provider unreachable")
		}
		charges.Add(1) // the side effect
		return nil
	})

	// The receiver, on Redis.
	rdb := redis.NewClient(&redis.Options{Addr: cmp.Or(os.Getenv("TEST_REDIS_ADDR"), "127.0.0.1:6379")})
	defer func() { _ = rdb.Close() }()
	store, err := redisstore.New(rdb, redisstore.Config{})
	if err != nil {
		panic(err)
	}
	r, err := receiver.New(receiver.Config{Store: store, TTL: time.Minute})
	if err != nil {
		panic(err)
	}
	if err := consume.Install(router, consume.RouterConfig{Receiver: r}); err != nil {
		panic(err)
	}

	go func() { _ = router.Run(context.Background()) }()
	defer func() { _ = router.Close() }()
	<-router.Running()
	payment := "pay-" + watermill.NewUUID()
	for range 2 { // the same payment, delivered twice
		msg := message.NewMessage(watermill.NewUUID(), []byte(`{"payment_id":"`+payment+`"}`))
		msg.Metadata.Set(consume.MetadataKey, payment)                    // the producer's idempotency key
		if err := pubSub.Publish("payments.requested", msg); err != nil { // returns once acked
			panic(err)
		}
	}
	fmt.Println("attempts:", attempts.Load(), "charges:", charges.Load())
	// Output: attempts: 2 charges: 1
}
