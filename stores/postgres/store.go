// Package postgres is the PostgreSQL implementation of [stores.Store], on pgx.
//
// The records live in one table (see package migrations, which creates it)
// in one of two layouts (see Layout): rows, a plain table whose expired rows
// the Sweeper deletes in batches, or partitioned, whose partitions the
// Sweeper drops once all their records have expired.
// Every method is exactly one SQL statement, so each is atomic on its own and
// needs no transaction (except Claim in the partitioned layout: two
// statements in one round trip and one transaction, see
// claim_partitioned.go); because the store runs on a small Querier interface,
// the same statements can also run inside a caller's pgx.Tx (see Store.With),
// so that the claim, the handler's writes and the result commit or roll back
// together.
// Unless Config.BatchSize turns it off, a Store on a pool claims, and
// completes, many keys of concurrent callers in one statement over arrays
// instead (see Config.BatchSize); each key's outcome is the one its own statement would
// have given.
//
// Time is PostgreSQL's: leases and TTLs are computed and judged with now(),
// never with the Go clock, and durations travel as integer microseconds
// turned into intervals by the server.
//
// now() is the start of the current transaction, not of the statement. That
// is deliberate. In autocommit use (a pool) the two are the same instant. In
// a caller's transaction now() keeps every statement of that transaction on
// one instant: an owner's Complete is judged at the same moment as its Claim,
// so it cannot fence itself out while its transaction still holds the row
// (nobody else can take over a row locked by an open transaction anyway).
// Judging other records' expiry at an earlier instant only errs on the safe
// side: a record looks live slightly longer, never shorter, so a live lease
// is never taken over early. The price is that a lease written late in a long
// transaction starts at the transaction's start: claim first.
// clock_timestamp() would give neither guarantee and could even differ
// between the expressions of one statement.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/internal/batch"
	"github.com/onceflow/onceflow/stores/postgres/internal/pgclaim"
)

// DefaultTable is the records table the migrations create.
const DefaultTable = "idempotency_records"

// Querier runs SQL statements. *pgxpool.Pool, *pgx.Conn and pgx.Tx satisfy
// it; a Store on a pgx.Tx runs its statements in that transaction.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

var (
	_ Querier = (*pgxpool.Pool)(nil)
	_ Querier = (*pgx.Conn)(nil)
	_ Querier = pgx.Tx(nil)
)

// Config configures a Store. The zero value is ready to use.
type Config struct {
	// Table is the records table, optionally schema-qualified
	// ("schema.table"); it is quoted, not interpolated. An unqualified name
	// resolves through the connection's search_path. Default DefaultTable.
	Table string

	// BatchSize coalesces concurrent Claims, and concurrent Completes,
	// into statements over arrays (unnest) of at most that many keys: one
	// round trip and one commit for the lot. Default DefaultBatchSize, the
	// service's; 1 (or Unbatched) runs each call alone. Every
	// call keeps its own outcome and error, so the contract holds call by
	// call; two calls on one key never share a statement, they run one
	// after the other. A call runs at once, alone, while fewer than
	// BatchWorkers batches are in flight, so an idle store adds no wait;
	// otherwise it joins the next batch and waits at most BatchTimeout
	// before that batch is sent. Under load a worker lets its queue fill
	// back to its last batch's size for up to BatchLinger before sending.
	// Batching applies only to a Store on a *pgxpool.Pool, never to one
	// made by With. The caveat: a batch waits as a whole on a row that an
	// open transaction holds (an exactly-once claim in flight), so keys in
	// that batch wait with it: a Store that serves transaction mode beside
	// its units should be Unbatched.
	BatchSize int
	// Unbatched runs each call alone, whatever BatchSize says.
	Unbatched bool
	// BatchWorkers is how many batches may be in flight at once, each on
	// its own connection. Default DefaultBatchWorkers.
	BatchWorkers int
	// BatchTimeout bounds how long a call waits to be sent. Default
	// DefaultBatchTimeout.
	BatchTimeout time.Duration
	// BatchLinger is how long a worker under load waits for its next
	// batch to fill back to its last one's size. Default
	// DefaultBatchLinger.
	BatchLinger time.Duration
	// BatchObserver, when set with batching on, is told the number of
	// calls of every batch as it is sent, op "claim" or "complete" (a call
	// sent alone is a batch of one): how full batches run, which
	// BatchWorkers and BatchLinger trade against a call's wait.
	BatchObserver func(op string, calls int)

	// Layout is the layout of Table, as migrations created it. Default
	// LayoutRows. CheckLayout compares it with the table's.
	Layout Layout
}

// Store is a [stores.Store] on PostgreSQL. It is safe for concurrent use when
// its Querier is (a pool is; a pgx.Conn or pgx.Tx is not). It owns nothing:
// closing the pool or finishing the transaction is the caller's business.
type Store struct {
	db  Querier
	sql *statements
	// table is the quoted table name, name the table as configured (for
	// messages); partitioned and lockClass are set in the partitioned
	// layout (see claim_partitioned.go).
	table, name string
	partitioned bool
	lockClass   int32
	// pool and batch are set when batching is on.
	pool  *pgxpool.Pool
	batch *batchers
}

var _ stores.Store = (*Store)(nil)

// New returns a Store that runs its statements on db, typically a
// *pgxpool.Pool. It fails only when db is nil, cfg.Table is not "name"
// or "schema.name", cfg.Layout is unknown, or a batching setting is
// negative. In the partitioned layout db must also send batches
// (SendBatch, as a pool, a pgx.Conn and a pgx.Tx do).
func New(db Querier, cfg Config) (*Store, error) {
	if db == nil {
		return nil, errors.New("missing database")
	}
	table := cfg.Table
	if table == "" {
		table = DefaultTable
	}
	quoted, err := pgclaim.QuoteTable(table)
	if err != nil {
		return nil, err
	}
	if cfg.BatchSize < 0 || cfg.BatchWorkers < 0 || cfg.BatchTimeout < 0 || cfg.BatchLinger < 0 {
		return nil, fmt.Errorf("negative batch setting: size %d, workers %d, timeout %v, linger %v: zero is the default",
			cfg.BatchSize, cfg.BatchWorkers, cfg.BatchTimeout, cfg.BatchLinger)
	}
	if cfg.BatchSize == 0 && !cfg.Unbatched {
		cfg.BatchSize = DefaultBatchSize
	}
	s := &Store{db: db, table: quoted, name: table}
	switch cfg.Layout {
	case "", LayoutRows:
		s.sql = newStatements(quoted)
	case LayoutPartitioned:
		if _, ok := db.(batchSender); !ok {
			return nil, errNoBatches
		}
		s.sql, s.partitioned, s.lockClass = newPartitionedStatements(quoted), true, lockClass(quoted)
	default:
		return nil, fmt.Errorf("unknown layout %q: use %s or %s", cfg.Layout, LayoutRows, LayoutPartitioned)
	}
	if pool, ok := db.(*pgxpool.Pool); ok && cfg.BatchSize > 1 && !cfg.Unbatched {
		s.pool = pool
		s.batch = newBatchers(s, batch.Config{
			MaxSize: cfg.BatchSize, Workers: cfg.BatchWorkers, Timeout: cfg.BatchTimeout, Linger: cfg.BatchLinger,
		}.Or(batch.Config{Workers: DefaultBatchWorkers, Timeout: DefaultBatchTimeout, Linger: DefaultBatchLinger}), cfg.BatchObserver)
	}
	return s, nil
}

// With returns a Store with the same configuration that runs its statements
// on q instead, typically the caller's pgx.Tx: a Claim made through it
// commits or rolls back with that transaction, and until then a concurrent
// Claim of the same key waits on the row. It is cheap; make one per
// transaction.
func (s *Store) With(q Querier) *Store {
	return &Store{db: q, sql: s.sql, table: s.table, name: s.name, partitioned: s.partitioned, lockClass: s.lockClass}
}

// statements are the SQL texts of one table, built once by New.
type statements struct {
	claim, complete, release, extend, sweep string
	claimBatch, completeBatch               string
	admin                                   adminStatements
	// lock and lockBatch take the claims' advisory locks in the
	// partitioned layout; empty in the rows layout.
	lock, lockBatch string
}

func newStatements(table string) *statements {
	return &statements{
		claim:    fmt.Sprintf(pgclaim.SQL, table),
		complete: fmt.Sprintf(completeSQL, table),
		release:  fmt.Sprintf(releaseSQL, table),
		extend:   fmt.Sprintf(extendSQL, table),
		sweep:    fmt.Sprintf(sweepSQL, table),

		claimBatch:    fmt.Sprintf(pgclaim.BatchSQL, table),
		completeBatch: fmt.Sprintf(completeBatchSQL, table),
		admin:         newAdminStatements(table),
	}
}
