package exactlyonce_test

import (
	"context"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/exactlyonce"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/stores/postgres"
)

// waitTimeout bounds every wait on an event in these tests.
const waitTimeout = 10 * time.Second

// fixture is a migrated schema of its own with an effects table, the
// records store on it and the Transactor of both.
type fixture struct {
	pool       *pgxpool.Pool
	transactor exactlyonce.Transactor
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	pool := testenv.MigratedPostgres(t)
	if _, err := pool.Exec(t.Context(), "CREATE TABLE effects (key text NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	store, err := postgres.New(pool, postgres.Config{Unbatched: true})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{pool: pool, transactor: exactlyonce.Transactor{DB: pool, Store: store}}
}

// effect records key in the unit of work ctx carries.
func effect(t *testing.T, ctx context.Context, key string) {
	t.Helper()
	tx, ok := postgres.TxFromContext(ctx)
	if !ok {
		t.Fatal("no unit of work in the context")
	}
	if _, err := tx.Exec(ctx, "INSERT INTO effects (key) VALUES ($1)", key); err != nil {
		t.Fatal(err)
	}
}

// effects returns the committed effects' keys.
func (f fixture) effects(t *testing.T) []string {
	t.Helper()
	rows, err := f.pool.Query(t.Context(), "SELECT key FROM effects ORDER BY key")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return keys
}

// subscriber is a watermill-sql subscriber in consumer group group, on db
// (a ConsumerBeginner, or a plain one), polling fast; closed when t ends.
func subscriber(t *testing.T, db wsql.Beginner, group string) *wsql.Subscriber {
	t.Helper()
	sub, err := wsql.NewSubscriber(db, wsql.SubscriberConfig{
		ConsumerGroup:    group,
		SchemaAdapter:    wsql.DefaultPostgreSQLSchema{},
		OffsetsAdapter:   wsql.DefaultPostgreSQLOffsetsAdapter{},
		InitializeSchema: true,
		PollInterval:     10 * time.Millisecond,
		ResendInterval:   10 * time.Millisecond,
	}, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Close() })
	return sub
}

// subscribe subscribes sub to topic, creating its tables.
func subscribe(t *testing.T, sub message.Subscriber, topic string) <-chan *message.Message {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	msgs, err := sub.Subscribe(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// publish publishes a message to topic on pool, outside any unit of work,
// and returns it.
func publish(t *testing.T, pool *pgxpool.Pool, topic string) *message.Message {
	t.Helper()
	pub, err := wsql.NewPublisher(wsql.BeginnerFromPgx(pool), wsql.PublisherConfig{
		SchemaAdapter: wsql.DefaultPostgreSQLSchema{}, AutoInitializeSchema: true,
	}, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	msg := message.NewMessage(watermill.NewUUID(), []byte(`{}`))
	if err := pub.Publish(topic, msg); err != nil {
		t.Fatal(err)
	}
	return msg
}

// next returns the next message of msgs.
func next(t *testing.T, msgs <-chan *message.Message) *message.Message {
	t.Helper()
	select {
	case msg := <-msgs:
		return msg
	case <-time.After(waitTimeout):
		t.Fatalf("no message within %v", waitTimeout)
		return nil
	}
}

// waitFor polls cond until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, waitTimeout, what, cond)
}
