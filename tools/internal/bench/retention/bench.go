package retention

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/migrations"
	"github.com/onceflow/onceflow/stores/postgres"
)

// filledPrefix starts the key of every filled record; claims use other keys.
const filledPrefix = "expired-"

// fillChunk is how many records one fill statement inserts.
const fillChunk = 500_000

// Bench is one round's schema, pool and store. It is not safe for
// concurrent use.
type Bench struct {
	opts   Options
	base   string
	schema string
	pool   *pgxpool.Pool
	store  *postgres.Store
	// drops are, per hour of records Fill wrote (per partition in the
	// partitioned layout), oldest first, the database time by which every
	// record of it has expired.
	drops []time.Time
}

// Open creates a fresh schema in opts.URL's database, applies the
// migrations to it and opens a pool on it.
func Open(ctx context.Context, opts Options) (*Bench, error) {
	opts = opts.withDefaults()
	suffix := make([]byte, 6)
	if _, err := rand.Read(suffix); err != nil {
		return nil, fmt.Errorf("naming schema: %w", err)
	}
	b := &Bench{opts: opts, base: opts.URL, schema: "retention_" + hex.EncodeToString(suffix)}
	if err := b.exec(ctx, "CREATE SCHEMA "+pgx.Identifier{b.schema}.Sanitize()); err != nil {
		return nil, fmt.Errorf("creating schema %s: %w", b.schema, err)
	}
	u, err := url.Parse(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("parsing database URL: %w", err)
	}
	q := u.Query()
	q.Set("search_path", b.schema)
	u.RawQuery = q.Encode()
	if err := migrations.UpURL(ctx, u.String(), migrations.WithLayout(migrations.Layout(opts.Layout))); err != nil {
		return nil, b.closeWith(err)
	}
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		return nil, b.closeWith(fmt.Errorf("parsing database URL: %w", err))
	}
	// The callers, the sweeper, and one spare for counting, all connected
	// now: on a shared server a connection opened mid-round may be refused.
	cfg.MaxConns = int32(opts.Callers + 2)
	cfg.MinConns = cfg.MaxConns
	if b.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, b.closeWith(fmt.Errorf("opening pool: %w", err))
	}
	if err := b.connectAll(ctx); err != nil {
		b.pool.Close()
		return nil, b.closeWith(err)
	}
	if b.store, err = postgres.New(b.pool, postgres.Config{Layout: opts.Layout, Unbatched: true}); err != nil {
		return nil, b.closeWith(err)
	}
	return b, nil
}

// connectAll opens every connection of the pool before the round starts.
func (b *Bench) connectAll(ctx context.Context) error {
	conns := make([]*pgxpool.Conn, 0, b.pool.Config().MaxConns)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range cap(conns) {
		c, err := b.pool.Acquire(ctx)
		if err != nil {
			return fmt.Errorf("connecting: %w", err)
		}
		conns = append(conns, c)
	}
	return nil
}

// fillTTL is the TTL of the filled records: each expires this long after
// it was written.
const fillTTL = 24 * time.Hour

// fillWidth is the range of creation times of one partition the fill
// writes into, the width the sweeper gives the partitions it creates.
const fillWidth = postgres.DefaultPartitionWidth

// Fill inserts opts.Rows completed records, written evenly and in key order
// over the opts.Windows whole hours (UTC) that ended at least a day
// (fillTTL) before now, with a TTL of a day, so every one of them has
// expired; then it vacuums and
// analyzes the table. Keys are zero-padded so that they arrive in key order
// too, which keeps primary key inserts on the rightmost leaf and the fill
// fast. It returns how long that took.
//
// The hours are whole partitions of the partitioned layout, one per
// sweeping window of Measure, which Fill creates first: partition k holds
// about Rows/Windows records, and all of them have expired once the clock
// reads the end of its range plus the TTL (drops[k]), an hour after
// partition k-1's. In the rows layout the same records are one backlog of
// expired rows.
func (b *Bench) Fill(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	conn, err := b.pool.Acquire(ctx)
	if err != nil {
		return 0, fmt.Errorf("filling: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SET synchronous_commit = off"); err != nil {
		return 0, fmt.Errorf("filling: %w", err)
	}
	var now time.Time
	if err := conn.QueryRow(ctx, "SELECT now()").Scan(&now); err != nil {
		return 0, fmt.Errorf("filling: %w", err)
	}
	// The last hour's records expire by its end plus the TTL, which is
	// not after now.
	end := now.Add(-fillTTL).Truncate(fillWidth)
	first := end.Add(-time.Duration(b.opts.Windows) * fillWidth)
	b.drops = make([]time.Time, b.opts.Windows)
	for k := range b.drops {
		b.drops[k] = first.Add(time.Duration(k+1)*fillWidth + fillTTL)
	}
	if b.opts.Layout == postgres.LayoutPartitioned {
		// As the sweeper would have created them when the records were
		// written.
		if _, err := b.store.CreatePartitions(ctx, first, end, fillWidth); err != nil {
			return 0, fmt.Errorf("filling: %w", err)
		}
	}
	n := b.opts.Rows
	for from := 1; from <= n; from += fillChunk {
		to := min(from+fillChunk-1, n)
		_, err := conn.Exec(ctx, `
			INSERT INTO idempotency_records (key, state, token, fingerprint, result, created_at, completed_at, expires_at)
			SELECT $1 || lpad(i::text, 10, '0'), 'completed', md5(i::text), decode(md5('f' || i), 'hex'), $2::bytea,
			       c, c, c + $7::bigint * interval '1 microsecond'
			FROM generate_series($3::int, $4::int) AS i,
			     LATERAL (SELECT $5::timestamptz + (i - 1) * ($6::bigint * interval '1 microsecond' / $8::int)) AS w(c)`,
			filledPrefix, make([]byte, 64), from, to, first, end.Sub(first).Microseconds(), fillTTL.Microseconds(), n)
		if err != nil {
			return 0, fmt.Errorf("filling rows %d to %d: %w", from, to, err)
		}
	}
	if _, err := conn.Exec(ctx, "VACUUM (ANALYZE) idempotency_records"); err != nil {
		return 0, fmt.Errorf("vacuuming after the fill: %w", err)
	}
	return time.Since(start), nil
}

// Close drops the round's schema and closes the pool. It drops the schema on
// a connection the pool already holds, as a shared server may refuse a new
// one.
func (b *Bench) Close() error {
	if b.pool == nil {
		return b.closeWith(nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := b.pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{b.schema}.Sanitize()+" CASCADE")
	b.pool.Close()
	if err != nil {
		return b.closeWith(nil)
	}
	return nil
}

// closeWith drops the schema and returns err, or the drop's error when err
// is nil.
func (b *Bench) closeWith(err error) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if derr := b.exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{b.schema}.Sanitize()+" CASCADE"); derr != nil && err == nil {
		err = fmt.Errorf("dropping schema %s: %w", b.schema, derr)
	}
	return err
}

// filledLeft counts the filled records still in the table.
func (b *Bench) filledLeft(ctx context.Context) (int64, error) {
	var n int64
	err := b.pool.QueryRow(ctx,
		"SELECT count(*) FROM idempotency_records WHERE key LIKE $1 || '%'", filledPrefix).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("counting filled records: %w", err)
	}
	return n, nil
}

// exec runs sql on a connection of its own to the base URL.
func (b *Bench) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, b.base)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}
