package linearizable_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/migrations"
	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/postgres"
	"github.com/onceflow/onceflow/tools/internal/linearizable"
)

// TestLinearizablePostgres checks that the histories of clients racing on a few
// keys fit the store contract's model (package linearizable), in both
// layouts, batched as the service runs the store: on the shared server
// while the store's connections are terminated under it, and on a server
// of the test's own that crashes (immediate shutdown) and recovers from
// its write-ahead log.
//
// The store judges leases by now(), its transaction's start, and takes
// effect at commit; writers of one key serialize on its row, but a Lookup
// (a plain read) may find ended a lease that a Complete or Extend judged
// live before and commits after. So the runs check with
// Config.ClockBeforeEffect. The long variant (LINEARIZABILITY=long) also
// checks, without Lookup, that the Store's own methods fit the strict
// model, adds unbatched stores, and crashes both layouts, repeatedly.
func TestLinearizablePostgres(t *testing.T) {
	layouts := []migrations.Layout{migrations.Rows, migrations.Partitioned}
	for _, layout := range layouts {
		t.Run(string(layout)+", connections terminated", func(t *testing.T) {
			pool, app := linearizablePool(t, testenv.PostgresSchema(t), layout)
			linearizable.Run(t, linearizableStore(t, pool, layout, 0), linearizable.Config{
				ClockBeforeEffect: true, NotSent: notSent, Faults: []linearizable.Fault{terminated(app)},
			})
		})
	}
	crashed := layouts[:1]
	if linearizable.Long() {
		crashed = layouts
		for _, layout := range layouts {
			t.Run(string(layout)+", unbatched", func(t *testing.T) {
				pool, _ := linearizablePool(t, testenv.PostgresSchema(t), layout)
				linearizable.Run(t, linearizableStore(t, pool, layout, 1), linearizable.Config{ClockBeforeEffect: true})
			})
			t.Run(string(layout)+", strict, without Lookup", func(t *testing.T) {
				pool, app := linearizablePool(t, testenv.PostgresSchema(t), layout)
				linearizable.Run(t, linearizableStore(t, pool, layout, 0), linearizable.Config{
					NoLookup: true, NotSent: notSent, Faults: []linearizable.Fault{terminated(app)},
				})
			})
		}
	}
	for _, layout := range crashed {
		t.Run(string(layout)+", server crashed", func(t *testing.T) {
			srv := testenv.PostgresServer(t)
			pool, _ := linearizablePool(t, srv.URL(), layout)
			duration := 2 * time.Second
			if linearizable.Long() {
				duration = 0 // the long variant's default
			}
			linearizable.Run(t, linearizableStore(t, pool, layout, 0), linearizable.Config{
				Duration: duration, Outlive: 600 * time.Millisecond, ClockBeforeEffect: true, NotSent: notSent,
				Faults: []linearizable.Fault{crash(srv)},
			})
		})
	}
}

// linearizablePool migrates the database of u with layout and returns a
// pool on it whose connections carry an application_name of their own, by
// which terminated finds them.
func linearizablePool(t *testing.T, u string, layout migrations.Layout) (*pgxpool.Pool, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := migrations.UpURL(ctx, u, migrations.WithLayout(layout)); err != nil {
		t.Fatalf("migrating: %v", err)
	}
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	app := "linearizable-" + string(stores.NewToken()[:8])
	q := parsed.Query()
	q.Set("application_name", app)
	parsed.RawQuery = q.Encode()
	pool, err := pgxpool.New(ctx, parsed.String())
	if err != nil {
		t.Fatalf("opening pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool, app
}

// linearizableStore is a store of layout on pool with batchSize (0: the
// service's default, batched).
func linearizableStore(t *testing.T, pool *pgxpool.Pool, layout migrations.Layout, batchSize int) *postgres.Store {
	t.Helper()
	cfg := postgres.Config{BatchSize: batchSize}
	if layout == migrations.Partitioned {
		cfg.Layout = postgres.LayoutPartitioned
	}
	s, err := postgres.New(pool, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// notSent reports errors of calls whose statement never reached the
// server: pgx's own verdict, or a connection that could not be made.
func notSent(err error) bool {
	var connect *pgconn.ConnectError
	return pgconn.SafeToRetry(err) || errors.As(err, &connect)
}

// terminated ends the backends of the store's pool (application_name app)
// with pg_terminate_backend, as a server restart or a proxy dropping
// connections would: statements in flight are cut off, committed or not.
func terminated(app string) linearizable.Fault {
	f := linearizable.Fault{
		Name: "the store's connections terminated", Start: 300 * time.Millisecond, Every: 400 * time.Millisecond,
		Inject: func(ctx context.Context) error {
			conn, err := pgx.Connect(ctx, testenv.PostgresURL())
			if err != nil {
				return err
			}
			defer conn.Close(ctx)
			// Right after a fault the pool may not have dialled again yet,
			// and on a loaded machine it may take a while: look for a
			// connection to terminate for up to 5 s.
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
				var n int
				err = conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n)
				if err != nil || n > 0 {
					return err
				}
				time.Sleep(5 * time.Millisecond)
			}
			return fmt.Errorf("no connection of %s to terminate", app)
		},
	}
	if linearizable.Long() {
		f.Every = 2 * time.Second
	}
	return f
}

// crash crashes srv (an immediate shutdown, see
// [testenv.PostgresProcess.Crash]), keeps it down a moment and starts it
// again.
func crash(srv *testenv.PostgresProcess) linearizable.Fault {
	f := linearizable.Fault{
		Name: "PostgreSQL crashed (immediate shutdown) and restarted", Start: 700 * time.Millisecond,
		Inject: func(context.Context) error {
			srv.Crash()
			time.Sleep(150 * time.Millisecond)
			return srv.Start()
		},
	}
	if linearizable.Long() {
		f.Every = 4 * time.Second
	}
	return f
}
