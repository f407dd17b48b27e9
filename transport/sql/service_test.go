package sql_test

import (
	"database/sql"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/onceflow/onceflow/app/apptest"
	"github.com/onceflow/onceflow/app/apptest/faults"
	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
	"github.com/onceflow/onceflow/transport"
)

// serviceEnv is the environment of a service of the test domain on the
// sql transport, in a PostgreSQL schema of its own that holds its records
// too (STORE=postgres).
func serviceEnv(t *testing.T) []string {
	t.Helper()
	return append(brokerenv.ServiceEnv(t, transport.SQL, nil), "STORE=postgres")
}

// The service on PostgreSQL alone: a request posted three times is
// charged, noticed and receipted once.
func TestSQLTransportChargesOnce(t *testing.T) {
	s := apptest.Start(t, testdomain.Domain(), serviceEnv(t)...)
	flowtest.PostThriceChargesOnce(t, s, "req-sql-1")
}

// A malformed message is parked in the poison topic (a table like any
// other) and the route goes on with the next message.
func TestSQLTransportPoisonsMalformed(t *testing.T) {
	s := apptest.Start(t, testdomain.Domain(), serviceEnv(t)...)
	flowtest.MalformedIsPoisoned(t, s, s.Producer(t), `{"id":7}`)
}

// A producer that knows nothing of this service but its message contract
// feeds it through PostgreSQL: three requests, each sent twice (once
// before the service starts, once while it runs), are charged once each.
func TestSQLTransportExternalProducer(t *testing.T) {
	env := serviceEnv(t)
	db, err := sql.Open("pgx", testenv.Setting(env, "DATABASE_URL"))
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
	//   - topic TOPIC_PREFIX + the domain's topic (the test domain's
	//     "testdomain.requested");
	//   - payload the JSON of the domain's event;
	//   - metadata "idempotency_key" = the event's id (without it, the
	//     message UUID is the key). Every copy of an event carries the same
	//     payload: a key reused with another payload is poisoned, not
	//     processed.
	pub, err := wsql.NewPublisher(wsql.BeginnerFromStdSQL(db), wsql.PublisherConfig{
		SchemaAdapter:        wsql.DefaultPostgreSQLSchema{},
		AutoInitializeSchema: true,
	}, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	topic := testenv.Setting(env, "TOPIC_PREFIX") + testdomain.TopicRequested
	sendAll := func() { flowtest.PublishPlain(t, pub, topic, 3, 1) }

	sendAll()
	s := apptest.Start(t, testdomain.Domain(), env...)
	sendAll()
	flowtest.WaitForCopies(t, s, 3, 2)
	if got, want := flowtest.Tally(t, s), flowtest.Want(3, 0); got != want {
		t.Errorf("tally = %+v, want %+v", got, want)
	}
}

// TestInjectedFailureOnSQLTransport is app's TestInjectedFailureAfterLedgerWrite
// in transaction mode on the sql transport, where the route runs in a
// savepoint of the subscriber's own transaction: the failed attempt rolls
// back to it, and the event goes straight to its topic table in the same
// transaction.
func TestInjectedFailureOnSQLTransport(t *testing.T) {
	testenv.Integration(t)
	charges := flowtest.ChargesAfterInjectedFailure(t, apptest.Start, flowtest.WithEffectKeys, "TRANSPORT=sql", "STORE=postgres",
		"DEDUP_MODE=transaction", "SQL_POLL_INTERVAL=10ms")
	t.Logf("transaction mode (postgres, sql transport): charges=%d", charges)
	if charges != 1 {
		t.Errorf("transaction mode on the sql transport: %d charges, want exactly 1", charges)
	}
}

// With faults' FailAfter=1 around every route, each attempt fails after
// its write, and the broker (the sql transport) redelivers it. Transaction
// mode rolls each write back: after several failed attempts the ledger
// holds no charge. Lease mode without effect keys (NoEffectKeys) keeps
// every write: each attempt charges again. With them it keeps the first
// attempt's charge only.
func TestFailAfterEveryAttemptThroughTheApp(t *testing.T) {
	testenv.Integration(t)
	testenv.Redis(t)
	const attempts = 2
	charges := func(t *testing.T, keys bool, environ ...string) int64 {
		d := faults.Wrap(testdomain.Domain(), faults.Config{FailAfter: 1, NoEffectKeys: !keys})
		s := apptest.Start(t, d, append([]string{"TRANSPORT=sql", "SQL_POLL_INTERVAL=10ms", "DATABASE_URL=" + testenv.PostgresSchema(t),
			"LOG_LEVEL=error"}, environ...)...)
		flowtest.PostOK(t, s, watermill.NewUUID())
		testenv.WaitFor(t, flowtest.Wait, "several failed attempts", func() bool {
			return flowtest.Outcomes(t, s, testdomain.ChargeRoute, "failed") >= attempts
		})
		return flowtest.Tally(t, s).Charges.Rows
	}
	redis := []string{"STORE=redis", "REDIS_URL=redis://" + testenv.RedisAddr() + "/0", "DEDUP_MODE=lease"}
	t.Run("transaction", func(t *testing.T) {
		if got := charges(t, flowtest.WithEffectKeys, "STORE=postgres", "DEDUP_MODE=transaction"); got != 0 {
			t.Errorf("transaction mode: %d charges, want 0 (every failed attempt rolled back)", got)
		}
	})
	t.Run("lease", func(t *testing.T) {
		if got := charges(t, flowtest.WithoutEffectKeys, redis...); got < attempts {
			t.Errorf("lease mode without effect keys: %d charges, want at least %d (one per failed attempt, kept)", got, attempts)
		}
	})
	t.Run("lease with effect keys", func(t *testing.T) {
		if got := charges(t, flowtest.WithEffectKeys, redis...); got != 1 {
			t.Errorf("lease mode with effect keys: %d charges, want 1 (the first attempt's)", got)
		}
	})
}
