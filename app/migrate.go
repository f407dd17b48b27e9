package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/onceflow/onceflow/migrations"
)

// checkSchema fails, in one line naming the command to run, when the
// schema of pool lacks migrations this build needs.
func checkSchema(ctx context.Context, pool *pgxpool.Pool) error {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	err := migrations.Check(ctx, db)
	if behind, ok := errors.AsType[*migrations.BehindError](err); ok {
		return fmt.Errorf("%w: run `onceflow migrate up` with this DATABASE_URL first, or set MIGRATE_ON_START=true", behind)
	}
	return err
}

// Migrate runs `onceflow migrate up|down|status` on DATABASE_URL's schema
// with the embedded migrations, writing what it did to out: up applies
// every pending migration, down undoes the latest one, status lists each
// migration as applied (and when) or pending. Replicas and other runs take
// turns under the migrations' lock.
func Migrate(ctx context.Context, environ []string, action string, out io.Writer) error {
	cfg, err := LoadConfig(environ)
	if err != nil {
		return err
	}
	if cfg.DatabaseURL == "" {
		return errors.New("DATABASE_URL is required: migrate works on its schema")
	}
	pool, err := openPostgres(ctx, cfg.DatabaseURL, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := migrations.NewProvider(ctx, db, migrations.WithLayout(migrations.Layout(cfg.PGRecordsLayout)))
	if err != nil {
		return err
	}
	switch action {
	case "up":
		results, err := p.Up(ctx)
		for _, r := range results {
			fmt.Fprintln(out, r)
		}
		if err != nil {
			return fmt.Errorf("migrate up: %w", err)
		}
		if len(results) == 0 {
			fmt.Fprintln(out, "no pending migrations: the schema is current")
		}
	case "down":
		r, err := p.Down(ctx)
		if errors.Is(err, goose.ErrNoNextVersion) {
			fmt.Fprintln(out, "no migration to undo: none is applied")
			return nil
		}
		if err != nil {
			return fmt.Errorf("migrate down: %w", err)
		}
		fmt.Fprintln(out, r)
	case "status":
		statuses, err := p.Status(ctx)
		if err != nil {
			return fmt.Errorf("migrate status: %w", err)
		}
		w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "VERSION\tSTATE\tAPPLIED AT\tFILE")
		for _, s := range statuses {
			at := ""
			if s.State == goose.StateApplied {
				at = s.AppliedAt.UTC().Format("2006-01-02 15:04:05Z")
			}
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\n", s.Source.Version, s.State, at, s.Source.Path)
		}
		return w.Flush()
	default:
		return fmt.Errorf("unknown migrate action %q: use up, down or status", action)
	}
	return nil
}
