package exactlyonce_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/message"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "github.com/lib/pq"              // database/sql driver "postgres"

	"github.com/onceflow/onceflow/exactlyonce"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/stores/postgres"
)

// On database/sql, with pgx's stdlib or lib/pq, a handler's *sql.Tx is
// the unit of work: a run that fails after its write leaves neither the
// write nor its message, the next run's write, message and record commit
// together, and a duplicate runs nothing. The receiver is given the store
// once, in the Transactor.
func TestTransactorOnDatabaseSQL(t *testing.T) {
	for _, driver := range []string{"pgx", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			ctx := t.Context()
			db := testenv.MigratedPostgresSQL(t, driver)
			if _, err := db.ExecContext(ctx, "CREATE TABLE effects (key text NOT NULL)"); err != nil {
				t.Fatal(err)
			}
			store, err := postgres.New(postgres.SQLQuerier(db), postgres.Config{})
			if err != nil {
				t.Fatal(err)
			}
			r, err := receiver.New(receiver.Config{Transactor: exactlyonce.Transactor{SQL: db, Store: store}})
			if err != nil {
				t.Fatal(err)
			}
			charged := subscribe(t, subscriber(t, wsql.BeginnerFromStdSQL(db), "notify"), "charged")
			outbox := exactlyonce.Outbox{Topics: map[string]string{"charge": "charged"}}

			runs := 0
			charge := func(ctx context.Context) ([]byte, error) {
				runs++
				tx, ok := postgres.SQLTxFromContext(ctx)
				if !ok {
					return nil, errors.New("no *sql.Tx in the unit's context")
				}
				if _, err := tx.ExecContext(ctx, "INSERT INTO effects (key) VALUES ($1)", "pay-1"); err != nil {
					return nil, err
				}
				msg := message.NewMessage(watermill.NewUUID(), []byte(`{"run":`+strconv.Itoa(runs)+`}`))
				if err := outbox.Write(ctx, "charge", []*message.Message{msg}); err != nil {
					return nil, err
				}
				if runs == 1 {
					return nil, errors.New("fails after its write")
				}
				return []byte("charged"), nil
			}
			if _, err := r.Execute(ctx, "charge", "pay-1", []byte("fp"), charge); err == nil {
				t.Fatal("the failing run returned no error")
			}
			for range 2 { // the run, then a duplicate
				res, err := r.Execute(ctx, "charge", "pay-1", []byte("fp"), charge)
				if err != nil || string(res.Value) != "charged" {
					t.Fatalf("Execute = %+v, %v; want the result charged", res, err)
				}
			}
			var effects int
			if err := db.QueryRowContext(ctx, "SELECT count(*) FROM effects").Scan(&effects); err != nil {
				t.Fatal(err)
			}
			if effects != 1 || runs != 2 {
				t.Fatalf("%d effects committed in %d runs, want 1 in 2", effects, runs)
			}
			got := next(t, charged)
			got.Ack()
			if string(got.Payload) != `{"run":2}` {
				t.Fatalf("outbox message %s, want the second run's", got.Payload)
			}
		})
	}
}
