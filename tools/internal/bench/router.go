package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/onceflow/onceflow/middleware/consume"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/stores"
)

// keySeq makes idempotency keys unique across the rounds of a run.
var keySeq atomic.Int64

// nextKeys returns a prefix for n fresh keys.
func nextKeys() string { return "k" + strconv.FormatInt(keySeq.Add(1), 36) + "-" }

// Middleware returns the middlewares of one router round and the function
// that frees what they hold; it is called before each round, outside the
// timed part.
type Middleware func() ([]message.HandlerMiddleware, func(), error)

// NoMiddleware is the router with nothing but the handler.
func NoMiddleware() ([]message.HandlerMiddleware, func(), error) { return nil, func() {}, nil }

// recordTTL is how long the records of a bench round live: longer than any
// round, and as long as the Deduplicator it is compared with keeps a key.
const recordTTL = 10 * time.Minute

// newReceiver is the receiver every bench measures: store s, defaults
// otherwise.
func newReceiver(s stores.Store) (*receiver.Receiver, error) {
	return receiver.New(receiver.Config{Store: s, TTL: recordTTL})
}

// ReceiverOn returns the onceflow receiver on a fresh store of backend b.
func ReceiverOn(env *Env, b Backend) Middleware {
	return onFreshStore(env, b, func(s stores.Store) (message.HandlerMiddleware, error) {
		r, err := newReceiver(s)
		if err != nil {
			return nil, err
		}
		return consume.Middleware(r), nil
	})
}

// onFreshStore returns the middleware that mw builds on a fresh store of
// backend b, which the round's free function closes.
func onFreshStore(env *Env, b Backend, mw func(stores.Store) (message.HandlerMiddleware, error)) Middleware {
	return func() ([]message.HandlerMiddleware, func(), error) {
		s, closeStore, err := env.NewStore(b)
		if err != nil {
			return nil, nil, err
		}
		m, err := mw(s)
		if err != nil {
			closeStore()
			return nil, nil, err
		}
		return []message.HandlerMiddleware{m}, closeStore, nil
	}
}

// RouterRound measures msg/s of a GoChannel router whose one handler
// consumes n unique messages (idempotency keys in metadata, payload bytes
// each) through the middlewares mw returns. The clock runs from the first
// publish to the last handler return.
func RouterRound(n, payload int, mw Middleware) func(ctx context.Context) (float64, error) {
	return func(ctx context.Context) (float64, error) {
		mws, free, err := mw()
		if err != nil {
			return 0, err
		}
		defer free()
		return routerRound(ctx, n, payload, mws)
	}
}

func routerRound(ctx context.Context, n, payload int, mws []message.HandlerMiddleware) (float64, error) {
	logger := watermill.NopLogger{}
	pubSub := gochannel.NewGoChannel(gochannel.Config{OutputChannelBuffer: publishWindow}, logger)
	defer func() { _ = pubSub.Close() }()
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: 10 * time.Second}, logger)
	if err != nil {
		return 0, err
	}
	router.AddMiddleware(mws...)
	var handled atomic.Int64
	done := make(chan struct{})
	inFlight := make(chan struct{}, publishWindow)
	router.AddConsumerHandler("bench", "bench.messages", pubSub, func(*message.Message) error {
		<-inFlight
		if handled.Add(1) == int64(n) {
			close(done)
		}
		return nil
	})
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- router.Run(runCtx) }()
	defer func() { _ = router.Close(); <-runErr }()
	select {
	case <-router.Running():
	case err := <-runErr:
		return 0, fmt.Errorf("router stopped: %w", err)
	}

	msgs := messages(n, payload)
	ctx, cancelRound := context.WithTimeout(ctx, roundTimeout)
	defer cancelRound()
	start := time.Now()
	published := make(chan error, 1)
	go func() { published <- publish(ctx, pubSub, msgs, inFlight) }()
	select {
	case <-done:
	case err := <-published:
		if err != nil {
			return 0, err
		}
		select {
		case <-done:
		case <-ctx.Done():
			return 0, fmt.Errorf("%d of %d messages handled: %w", handled.Load(), n, ctx.Err())
		}
	case <-ctx.Done():
		return 0, fmt.Errorf("%d of %d messages handled: %w", handled.Load(), n, ctx.Err())
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// publishWindow bounds the messages published but not yet handled. GoChannel
// starts goroutines per published message that wait for the subscriber, so
// publishing a whole round at once would measure tens of thousands of
// parked goroutines rather than the handler's path.
const publishWindow = 256

// roundTimeout bounds a router round: a message the handler never sees
// would otherwise hang the run.
const roundTimeout = 2 * time.Minute

// publish publishes msgs one by one, each once inFlight has room; the
// handler frees a place per message.
func publish(ctx context.Context, pub message.Publisher, msgs []*message.Message, inFlight chan struct{}) error {
	for _, m := range msgs {
		select {
		case inFlight <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := pub.Publish("bench.messages", m); err != nil {
			return err
		}
	}
	return nil
}

// messages returns n messages with fresh idempotency keys and payloads of
// size bytes.
func messages(n, size int) []*message.Message {
	prefix := nextKeys()
	msgs := make([]*message.Message, n)
	for i := range msgs {
		key := prefix + strconv.Itoa(i)
		p := make([]byte, size)
		copy(p, key)
		msgs[i] = message.NewMessage(watermill.NewUUID(), p)
		msgs[i].Metadata.Set(consume.MetadataKey, key)
	}
	return msgs
}
