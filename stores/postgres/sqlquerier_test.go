package postgres_test

import (
	"database/sql"
	"fmt"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "github.com/lib/pq"              // database/sql driver "postgres"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/postgres"
	"github.com/onceflow/onceflow/stores/storetest"
)

// A Store on database/sql keeps the contract with either PostgreSQL
// driver: pgx's stdlib and lib/pq.
func TestConformanceOnDatabaseSQL(t *testing.T) {
	for _, driver := range []string{"pgx", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			storetest.Run(t, storetest.Harness{
				New: func(t *testing.T) stores.Store {
					return mustNew(t, postgres.SQLQuerier(testenv.MigratedPostgresSQL(t, driver)), postgres.Config{})
				},
				Unavailable: func(t *testing.T) stores.Store {
					db := openSQL(t, driver, fmt.Sprintf("postgres://postgres@%s/test?sslmode=disable&connect_timeout=1", testenv.ClosedAddr(t)))
					return mustNew(t, postgres.SQLQuerier(db), postgres.Config{})
				},
			})
		})
	}
}

// The partitioned layout sends batches, which database/sql cannot.
func TestDatabaseSQLRefusesThePartitionedLayout(t *testing.T) {
	db := openSQL(t, "pgx", "postgres://postgres@127.0.0.1:1/test")
	if _, err := postgres.New(postgres.SQLQuerier(db), postgres.Config{Layout: postgres.LayoutPartitioned}); err == nil {
		t.Fatal("New accepted the partitioned layout on database/sql")
	}
}

// openSQL is a database/sql pool of driver on u, closed when t ends.
func openSQL(t *testing.T, driver, u string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}
