package provider

import (
	"context"
	"embed"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/onceflow/onceflow/migrations"
	storepg "github.com/onceflow/onceflow/stores/postgres"
)

// Name names the provider's migrations: they are versioned in
// goose_db_version_testprovider, beside the records' goose_db_version.
const Name = "testprovider"

// migrationFiles are the provider's goose migrations, the .sql files
// beside this one.
//
//go:embed *.sql
var migrationFiles embed.FS

// book keeps the charges made. Implementations are safe for concurrent
// use.
type book interface {
	add(ctx context.Context, c charge) error
	counts(ctx context.Context) (Counts, error)
}

// memoryBook counts charges in memory: by ref, and in all.
type memoryBook struct {
	mu    sync.Mutex
	refs  map[string]int64
	total int64
}

func (b *memoryBook) add(ctx context.Context, c charge) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refs[c.Ref]++
	b.total++
	return nil
}

func (b *memoryBook) counts(context.Context) (Counts, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return Counts{Charges: b.total, IDs: int64(len(b.refs))}, nil
}

// postgresBook keeps charges in the table testprovider_charges. A charge
// made in the unit of work of its Idempotency-Key record joins the unit's
// transaction, so the two commit together.
type postgresBook struct{ db *pgxpool.Pool }

func (b postgresBook) add(ctx context.Context, c charge) error {
	var q storepg.Querier = b.db
	if tx, ok := storepg.TxFromContext(ctx); ok {
		q = tx
	}
	_, err := q.Exec(ctx, `INSERT INTO testprovider_charges (id, ref, amount) VALUES ($1, $2, $3)`, c.ID, c.Ref, c.Amount)
	return err
}

func (b postgresBook) counts(ctx context.Context) (Counts, error) {
	var c Counts
	err := b.db.QueryRow(ctx, `SELECT count(*), count(DISTINCT ref) FROM testprovider_charges`).Scan(&c.Charges, &c.IDs)
	if err != nil {
		return Counts{}, fmt.Errorf("counting the provider's charges: %w", err)
	}
	return c, nil
}

// openPostgres migrates db, the records' tables and then the provider's,
// and returns the records' store on it.
func openPostgres(ctx context.Context, db *pgxpool.Pool) (*storepg.Store, error) {
	sqlDB := stdlib.OpenDBFromPool(db)
	defer sqlDB.Close()
	for _, opts := range [][]migrations.Option{nil, {migrations.Of(Name, migrationFiles)}} {
		if err := migrations.Up(ctx, sqlDB, opts...); err != nil {
			return nil, fmt.Errorf("migrating the provider: %w", err)
		}
	}
	return storepg.New(db, storepg.Config{})
}
