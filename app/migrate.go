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

	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/migrations"
)

// migrationSet is one independently versioned set of migrations.
type migrationSet struct {
	name string // "records", or the domain's name
	opts []migrations.Option
}

// migrationSets is what the service migrates, in order: the idempotency
// records in layout, then the domain's tables, if it has any.
func migrationSets(layout string, d domain.Domain) []migrationSet {
	sets := []migrationSet{{"records", []migrations.Option{migrations.WithLayout(migrations.Layout(layout))}}}
	if d.Migrations != nil {
		sets = append(sets, migrationSet{d.Name, []migrations.Option{migrations.Of(d.Name, d.Migrations)}})
	}
	return sets
}

// checkSchema fails, in one line naming the command to run, when the
// schema of pool lacks migrations this build needs, the records' or the
// domain's.
func checkSchema(ctx context.Context, pool *pgxpool.Pool, d domain.Domain) error {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	for _, set := range migrationSets(string(migrations.Rows), d) {
		err := migrations.Check(ctx, db, set.opts...)
		if behind, ok := errors.AsType[*migrations.BehindError](err); ok {
			return fmt.Errorf("%s: %w: run `onceflow migrate up` with this DATABASE_URL first, or set MIGRATE_ON_START=true", set.name, behind)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Migrate runs `onceflow migrate up|down|status` on DATABASE_URL's schema
// with the embedded migrations of the records and of the domain d, writing
// what it did to out: up applies every pending migration, records first;
// down undoes the latest one of the domain, or of the records once the
// domain has none applied; status lists each migration as applied (and
// when) or pending. Replicas and other runs take turns under the
// migrations' lock.
func Migrate(ctx context.Context, environ []string, d domain.Domain, action string, out io.Writer) error {
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
	sets := migrationSets(cfg.PGRecordsLayout, d)
	providers := make([]*goose.Provider, len(sets))
	for i, set := range sets {
		if providers[i], err = migrations.NewProvider(ctx, db, set.opts...); err != nil {
			return fmt.Errorf("%s: %w", set.name, err)
		}
	}
	switch action {
	case "up":
		applied := 0
		for i, p := range providers {
			results, err := p.Up(ctx)
			for _, r := range results {
				fmt.Fprintf(out, "%s: %s\n", sets[i].name, r)
			}
			if err != nil {
				return fmt.Errorf("migrate up: %s: %w", sets[i].name, err)
			}
			applied += len(results)
		}
		if applied == 0 {
			fmt.Fprintln(out, "no pending migrations: the schema is current")
		}
	case "down":
		for i := len(providers) - 1; i >= 0; i-- {
			r, err := providers[i].Down(ctx)
			if errors.Is(err, goose.ErrNoNextVersion) {
				continue // none of this set is applied: undo the set before it
			}
			if err != nil {
				return fmt.Errorf("migrate down: %s: %w", sets[i].name, err)
			}
			fmt.Fprintf(out, "%s: %s\n", sets[i].name, r)
			return nil
		}
		fmt.Fprintln(out, "no migration to undo: none is applied")
	case "status":
		w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "SET\tVERSION\tSTATE\tAPPLIED AT\tFILE")
		for i, p := range providers {
			statuses, err := p.Status(ctx)
			if err != nil {
				return fmt.Errorf("migrate status: %s: %w", sets[i].name, err)
			}
			for _, s := range statuses {
				at := ""
				if s.State == goose.StateApplied {
					at = s.AppliedAt.UTC().Format("2006-01-02 15:04:05Z")
				}
				fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\n", sets[i].name, s.Source.Version, s.State, at, s.Source.Path)
			}
		}
		return w.Flush()
	default:
		return fmt.Errorf("unknown migrate action %q: use up, down or status", action)
	}
	return nil
}
