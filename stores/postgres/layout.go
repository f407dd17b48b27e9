package postgres

import (
	"context"
	"fmt"
)

// Layout is the layout of the records table, which package migrations
// creates (PG_RECORDS_LAYOUT in the service).
type Layout string

// The two layouts, named as package migrations names them.
const (
	// LayoutRows is one plain table with a primary key on key; the
	// Sweeper deletes expired rows in batches.
	LayoutRows Layout = "rows"
	// LayoutPartitioned is a table partitioned by range of created_at with
	// a primary key on (key, created_at); Claim keeps one record per key
	// (see claim_partitioned.go) and the Sweeper creates partitions ahead
	// and drops those whose records have all expired (see partitions.go).
	LayoutPartitioned Layout = "partitioned"
)

// Layout returns the layout the Store was configured with.
func (s *Store) Layout() Layout {
	if s.partitioned {
		return LayoutPartitioned
	}
	return LayoutRows
}

// CheckLayout reads the records table's layout from the catalog and fails
// when the table is missing or its layout is not the Store's: the layout is
// chosen when the migrations create the table, and the statements of one
// layout do not keep the contract on the other.
func (s *Store) CheckLayout(ctx context.Context) error {
	var kind *string
	err := s.db.QueryRow(ctx, `SELECT (SELECT relkind::text FROM pg_class WHERE oid = to_regclass($1))`, s.table).Scan(&kind)
	if err != nil {
		return fmt.Errorf("reading the layout of %s: %w", s.name, translate(ctx, "check layout", err))
	}
	if kind == nil {
		return fmt.Errorf("records table %s does not exist", s.name)
	}
	have := LayoutRows
	if *kind == "p" {
		have = LayoutPartitioned
	}
	if have != s.Layout() {
		return fmt.Errorf("records table %s has the %s layout, not %s: the layout is chosen when the migrations create the table",
			s.name, have, s.Layout())
	}
	return nil
}
