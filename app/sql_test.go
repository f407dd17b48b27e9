package app

import (
	"database/sql"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/onceflow/onceflow/internal/testenv"
)

// The service on PostgreSQL alone: a payment posted three times is charged
// and notified once.
func TestSQLTransportChargesOnce(t *testing.T) {
	a := startApp(t, "TRANSPORT=sql", "STORE=postgres", "DATABASE_URL="+testenv.PostgresSchema(t),
		"SQL_POLL_INTERVAL=10ms")
	postThriceChargesOnce(t, a, "pay-sql-1")
}

// A malformed message is parked in the poison topic (a table like any
// other) and the handler goes on with the next message.
func TestSQLTransportPoisonsMalformed(t *testing.T) {
	a := startApp(t, "TRANSPORT=sql", "STORE=postgres", "DATABASE_URL="+testenv.PostgresSchema(t),
		"SQL_POLL_INTERVAL=10ms")
	malformedIsPoisoned(t, a, `{"payment_id":7}`)
}

// A producer that knows nothing of this service but its message contract
// feeds it through PostgreSQL: three payments, each sent twice (once before
// the service starts, once while it runs), are charged once each.
func TestSQLTransportExternalProducer(t *testing.T) {
	const prefix = "ext_"
	databaseURL := testenv.PostgresSchema(t)
	db, err := sql.Open("pgx", databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })

	// The message contract of TRANSPORT=sql, as a producer configures it:
	//   - github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql publisher on the
	//     service's database (DATABASE_URL, same schema), through pgx or
	//     database/sql, with SchemaAdapter sql.DefaultPostgreSQLSchema{} (topic
	//     T is the table "watermill_T", payload column JSON) and
	//     AutoInitializeSchema true, so it may publish before the service
	//     has ever run;
	//   - topic TOPIC_PREFIX + "payments.requested";
	//   - payload the JSON of a PaymentRequested;
	//   - metadata "idempotency_key" = the payment id (without it, the message
	//     UUID is the key). Every copy of a payment carries the same payload:
	//     a key reused with another payload is poisoned, not processed.
	pub, err := wsql.NewPublisher(wsql.BeginnerFromStdSQL(db), wsql.PublisherConfig{
		SchemaAdapter:        wsql.DefaultPostgreSQLSchema{},
		AutoInitializeSchema: true,
	}, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	sendAll := func() { publishPlainPayments(t, pub, prefix+"payments.requested", 3, 1) }

	sendAll()
	a := startApp(t, "TRANSPORT=sql", "STORE=postgres", "DATABASE_URL="+databaseURL,
		"TOPIC_PREFIX="+prefix, "SQL_POLL_INTERVAL=10ms")
	sendAll()
	waitForCopies(t, a, 3, 2)
	if got, want := a.summary(t), (summary{3, 3, 3}); got != want {
		t.Errorf("summary = %+v, want %+v", got, want)
	}
}
