package migrations

import (
	"context"
	"database/sql"
	"fmt"
)

// BehindError reports a schema that lacks migrations this build needs.
type BehindError struct {
	// Current is the highest version applied (0: none).
	Current int64
	// Target is the highest version of FS.
	Target int64
}

func (e *BehindError) Error() string {
	return fmt.Sprintf("the database schema is at version %d and this build needs %d", e.Current, e.Target)
}

// Check returns nil when every migration of FS (or, with [Of], of the
// domain) is applied to db's schema,
// and a [*BehindError] when some are not. It applies nothing and takes no
// lock (goose only creates its version table if it is missing), so a
// replica that starts while another migrates is not held up. A schema
// ahead of this build (migrations it does not know, applied by a newer
// one) passes.
func Check(ctx context.Context, db *sql.DB, opts ...Option) error {
	p, err := NewProvider(ctx, db, opts...)
	if err != nil {
		return err
	}
	pending, err := p.HasPending(ctx)
	if err != nil {
		return fmt.Errorf("checking migrations: %w", err)
	}
	if !pending {
		return nil
	}
	current, target, err := p.GetVersions(ctx)
	if err != nil {
		return fmt.Errorf("checking migrations: %w", err)
	}
	return &BehindError{Current: current, Target: target}
}
