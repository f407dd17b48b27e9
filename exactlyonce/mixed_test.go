package exactlyonce_test

import (
	"errors"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/onceflow/onceflow/middleware/consume"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/stores/memory"
	"github.com/onceflow/onceflow/stores/postgres"
)

// One router, two modes: the ledger handler runs in transaction mode, its
// own receiver's, so its write rolls back with its failed first attempt;
// the notify handler runs in lease mode, the router's, on the memory
// store. Each handles the payment once, and its copy is a duplicate for
// both.
func TestInstallMixesModesPerHandler(t *testing.T) {
	f := newFixture(t)
	inTx, err := receiver.New(receiver.Config{Transactor: f.transactor})
	if err != nil {
		t.Fatal(err)
	}
	store := memory.New(memory.Config{})
	t.Cleanup(func() { _ = store.Close() })
	leased, err := receiver.New(receiver.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	pubSub := gochannel.NewGoChannel(gochannel.Config{BlockPublishUntilSubscriberAck: true}, watermill.NopLogger{})
	t.Cleanup(func() { _ = pubSub.Close() })
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: 5 * time.Second}, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	var ledgerRuns, notified atomic.Int32
	router.AddConsumerHandler("ledger", "payments", pubSub, func(msg *message.Message) error {
		tx, ok := postgres.TxFromContext(msg.Context())
		if !ok {
			return errors.New("the ledger handler ran outside a unit of work")
		}
		if _, err := tx.Exec(msg.Context(), "INSERT INTO effects (key) VALUES ($1)", "ledger "+msg.Metadata.Get(consume.MetadataKey)); err != nil {
			return err
		}
		if ledgerRuns.Add(1) == 1 {
			return errors.New("fails after its write")
		}
		return nil
	})
	router.AddConsumerHandler("notify", "payments", pubSub, func(msg *message.Message) error {
		if _, ok := postgres.TxFromContext(msg.Context()); ok {
			return errors.New("the notify handler ran in a unit of work")
		}
		notified.Add(1)
		return nil
	})
	err = consume.Install(router, consume.RouterConfig{
		Receiver: leased,
		Retry:    &consume.Retry{Interval: time.Millisecond},
		Handlers: map[string]consume.HandlerConfig{"ledger": {Receiver: inTx}},
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = router.Run(t.Context()) }()
	t.Cleanup(func() { _ = router.Close() })
	<-router.Running()

	for range 2 { // the payment and its copy
		msg := message.NewMessage(watermill.NewUUID(), []byte(`{}`))
		msg.Metadata.Set(consume.MetadataKey, "pay-1")
		if err := pubSub.Publish("payments", msg); err != nil { // returns once both handlers acked it
			t.Fatal(err)
		}
	}
	if got := f.effects(t); !slices.Equal(got, []string{"ledger pay-1"}) {
		t.Errorf("committed effects %v, want the ledger's one", got)
	}
	if ledgerRuns.Load() != 2 || notified.Load() != 1 {
		t.Errorf("ledger ran %d times, notify %d; want 2 (a failed attempt, then its retry) and 1", ledgerRuns.Load(), notified.Load())
	}
}
