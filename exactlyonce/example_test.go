package exactlyonce_test

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/onceflow/onceflow/exactlyonce"
	"github.com/onceflow/onceflow/middleware/consume"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/migrations"
	"github.com/onceflow/onceflow/stores/postgres"
)

// A Watermill service on database/sql, which already retries its failures
// and parks what still fails, takes transaction mode: the handler writes
// through the unit's *sql.Tx instead of the pool, and its charge commits
// with the record of its message, or not at all. Its first attempt fails
// after the charge, which rolls back; the broker delivers the payment
// twice; one charge is committed.
func ExampleTransactor_databaseSQL() {
	// The service as it was.
	db, err := sql.Open("pgx", cmp.Or(os.Getenv("TEST_DATABASE_URL"), "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"))
	if err != nil {
		panic(err)
	}
	defer func() { _ = db.Close() }()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS example_charges (payment_id text NOT NULL)"); err != nil {
		panic(err)
	}
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
	var attempts atomic.Int32
	router.AddConsumerHandler("charge", "payments.requested", pubSub, func(msg *message.Message) error {
		tx, _ := postgres.SQLTxFromContext(msg.Context()) // was: db
		if _, err := tx.ExecContext(msg.Context(), "INSERT INTO example_charges VALUES ($1)", msg.Metadata.Get(consume.MetadataKey)); err != nil {
			return err
		}
		if attempts.Add(1) == 1 {
			return errors.New("connection lost after the charge")
		}
		return nil
	})

	// The receiver, in transaction mode.
	if err := migrations.Up(ctx, db); err != nil { // the records table
		panic(err)
	}
	store, err := postgres.New(postgres.SQLQuerier(db), postgres.Config{})
	if err != nil {
		panic(err)
	}
	r, err := receiver.New(receiver.Config{Transactor: exactlyonce.Transactor{SQL: db, Store: store}, TTL: time.Minute})
	if err != nil {
		panic(err)
	}
	if err := consume.Install(router, consume.RouterConfig{Receiver: r}); err != nil {
		panic(err)
	}

	go func() { _ = router.Run(ctx) }()
	defer func() { _ = router.Close() }()
	<-router.Running()
	payment := "pay-" + watermill.NewUUID()
	for range 2 { // the same payment, delivered twice
		msg := message.NewMessage(watermill.NewUUID(), []byte(`{"payment_id":"`+payment+`"}`))
		msg.Metadata.Set(consume.MetadataKey, payment)
		if err := pubSub.Publish("payments.requested", msg); err != nil { // returns once acked
			panic(err)
		}
	}
	var charges int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM example_charges WHERE payment_id = $1", payment).Scan(&charges); err != nil {
		panic(err)
	}
	fmt.Println("attempts:", attempts.Load(), "charges committed:", charges)
	// Output: attempts: 2 charges committed: 1
}
