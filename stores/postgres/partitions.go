package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Defaults of the partition settings of SweeperConfig.
const (
	// DefaultPartitionWidth is the range of created_at each new partition
	// covers. Every Claim looks its key up in every partition, so fewer,
	// wider partitions make claims cheaper, narrower ones free space
	// sooner: a partition goes about Width + DEDUP_TTL + Grace after its
	// range began.
	DefaultPartitionWidth = time.Hour
	// DefaultPartitionsAhead is how many partitions past the current one
	// are kept created.
	DefaultPartitionsAhead = 3
	// DefaultPartitionGrace is how long a partition's range, and every
	// expiry in it, must lie in the past before it is dropped.
	DefaultPartitionGrace = time.Hour
)

// Partition is one range partition of a partitioned records table.
type Partition struct {
	// Name is the partition, quoted and schema-qualified.
	Name string
	// From and To bound its created_at: From inclusive, To exclusive.
	From, To time.Time
	// DetachPending is set while an interrupted DETACH ... CONCURRENTLY
	// is still to be finalised.
	DetachPending bool
}

// partitionsSQL lists the range partitions of the table $1 with their
// bounds, which the catalog holds only as text.
const partitionsSQL = `
SELECT n.nspname, c.relname, i.inhdetachpending, b[1]::timestamptz, b[2]::timestamptz
FROM pg_inherits AS i
JOIN pg_class AS c ON c.oid = i.inhrelid
JOIN pg_namespace AS n ON n.oid = c.relnamespace
CROSS JOIN LATERAL regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \(''([^'']*)''\) TO \(''([^'']*)''\)') AS b
WHERE i.inhparent = to_regclass($1) AND b IS NOT NULL
ORDER BY 4`

// attachSQL builds the ATTACH statement of a partition ($2) to its table
// ($1) for the range [$3, $4), quoting on the server: DDL takes no
// parameters.
const attachSQL = `SELECT format('ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM (%L) TO (%L)', $1::regclass, $2::regclass, $3::timestamptz, $4::timestamptz)`

// Partitions lists the partitions of the records table, oldest first. It
// needs the partitioned layout and a Store on a *pgxpool.Pool.
func (s *Store) Partitions(ctx context.Context) ([]Partition, error) {
	var parts []Partition
	err := s.withMaintenance(ctx, false, func(_ *pgxpool.Conn, listed []Partition) error {
		parts = listed
		return nil
	})
	return parts, err
}

func listPartitions(ctx context.Context, conn *pgxpool.Conn, table string) ([]Partition, error) {
	rows, err := conn.Query(ctx, partitionsSQL, table)
	if err != nil {
		return nil, fmt.Errorf("listing partitions: %w", err)
	}
	var schema, name string
	var p Partition
	parts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Partition, error) {
		if err := row.Scan(&schema, &name, &p.DetachPending, &p.From, &p.To); err != nil {
			return Partition{}, err
		}
		p.Name = pgx.Identifier{schema, name}.Sanitize()
		return p, nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing partitions: %w", err)
	}
	return parts, nil
}

// CreatePartitions creates partitions so that every created_at in
// [from, to) has one: each missing range is cut at multiples of width (in
// UTC) and at the existing partitions' bounds. It returns how many it
// created. A partition is made as a table of its own and then attached,
// which locks the records table in SHARE UPDATE EXCLUSIVE mode only, so
// claims never wait for it (CREATE TABLE ... PARTITION OF would lock them
// out). It waits while another process maintains the table.
func (s *Store) CreatePartitions(ctx context.Context, from, to time.Time, width time.Duration) (created int, err error) {
	if width <= 0 {
		return 0, fmt.Errorf("creating partitions: width %v must be positive", width)
	}
	err = s.withMaintenance(ctx, true, func(conn *pgxpool.Conn, parts []Partition) (err error) {
		created, err = s.createPartitions(ctx, conn, parts, from, to, width)
		return err
	})
	return created, err
}

// createPartitions is CreatePartitions on conn, which holds the
// maintenance lock, with parts the partitions listed under it.
func (s *Store) createPartitions(ctx context.Context, conn *pgxpool.Conn, parts []Partition, from, to time.Time, width time.Duration) (int, error) {
	missing := gaps(parts, from, to, width)
	if len(missing) == 0 {
		return 0, nil
	}
	var schema, parent string
	err := conn.QueryRow(ctx, `SELECT n.nspname, c.relname FROM pg_class AS c
		JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE c.oid = to_regclass($1)`, s.table).Scan(&schema, &parent)
	if err != nil {
		return 0, fmt.Errorf("reading records table %s: %w", s.name, err)
	}
	for i, g := range missing {
		name := pgx.Identifier{schema, parent + "_" + g[0].UTC().Format("20060102_150405")}.Sanitize()
		if err := createPartition(ctx, conn, s.table, name, g[0], g[1]); err != nil {
			return i, err
		}
	}
	return len(missing), nil
}

func createPartition(ctx context.Context, conn *pgxpool.Conn, table, name string, from, to time.Time) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, fmt.Sprintf("CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS)", name, table))
		if err == nil {
			err = attach(ctx, tx, table, name, from, to)
		}
		if err != nil {
			return fmt.Errorf("creating partition %s: %w", name, err)
		}
		return nil
	})
}

func attach(ctx context.Context, q Querier, table, name string, from, to time.Time) error {
	var stmt string
	if err := q.QueryRow(ctx, attachSQL, table, name, from, to).Scan(&stmt); err != nil {
		return err
	}
	_, err := q.Exec(ctx, stmt)
	return err
}

// dbNow reads the database's time on conn.
func dbNow(ctx context.Context, conn *pgxpool.Conn) (time.Time, error) {
	var t time.Time
	if err := conn.QueryRow(ctx, "SELECT now()").Scan(&t); err != nil {
		return t, fmt.Errorf("reading the time: %w", err)
	}
	return t, nil
}

// gaps returns the ranges of [from, to) that no partition of parts (sorted
// by From) covers, cut at multiples of width and at partition bounds.
func gaps(parts []Partition, from, to time.Time, width time.Duration) [][2]time.Time {
	var out [][2]time.Time
	c := from.Truncate(width)
	for c.Before(to) {
		i := slices.IndexFunc(parts, func(p Partition) bool { return !c.Before(p.From) && c.Before(p.To) })
		if i >= 0 {
			c = parts[i].To
			continue
		}
		next := c.Truncate(width).Add(width)
		for _, p := range parts {
			if p.From.After(c) && p.From.Before(next) {
				next = p.From
			}
		}
		out = append(out, [2]time.Time{c, next})
		c = next
	}
	return out
}

// withMaintenance runs f on a connection of the Store's pool, with the
// table's partitions listed on it. With lock, it first takes the table's
// maintenance lock (a session advisory lock, so that replicas never
// maintain one table at once), waiting for another session that holds it,
// and lists the partitions under it.
func (s *Store) withMaintenance(ctx context.Context, lock bool, f func(*pgxpool.Conn, []Partition) error) error {
	if !s.partitioned {
		return fmt.Errorf("records table %s has the rows layout: it has no partitions", s.name)
	}
	pool, ok := s.db.(*pgxpool.Pool)
	if !ok {
		return errors.New("maintaining partitions needs a Store on a *pgxpool.Pool")
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return translate(ctx, "maintain partitions", err)
	}
	defer conn.Release()
	run := func() error {
		parts, err := listPartitions(ctx, conn, s.table)
		if err != nil {
			return err
		}
		return f(conn, parts)
	}
	if !lock {
		return run()
	}
	var id int64
	if err := conn.QueryRow(ctx, maintenanceLockSQL, s.table).Scan(&id, nil); err != nil {
		return translate(ctx, "maintain partitions", err)
	}
	defer func() {
		// A connection that cannot unlock is closed, which unlocks.
		if _, err := conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", id); err != nil {
			_ = conn.Conn().Close(context.WithoutCancel(ctx))
		}
	}()
	return run()
}

// maintenanceLockSQL takes the session advisory lock of the maintenance of
// the table $1, keyed by the table's oid (the same table name in another
// schema is another lock), waiting for another session that holds it. It
// returns the lock's key.
const maintenanceLockSQL = `
SELECT k, pg_advisory_lock(k)
FROM (SELECT hashtextextended('onceflow/partitions/' || to_regclass($1)::oid, 0) AS k) AS l`
