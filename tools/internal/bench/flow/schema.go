package flow

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// schema is a PostgreSQL schema of the bench's own, so that its tables
// never meet another user's, and a pool whose search_path points at it.
type schema struct {
	base string // the URL the schema was created through
	name string
	url  string // base with the schema as search_path
	pool *pgxpool.Pool
}

// openSchema creates a fresh schema named prefix plus a random suffix on
// the database at databaseURL and opens a pool on it.
func openSchema(ctx context.Context, databaseURL, prefix string) (*schema, error) {
	name := prefix + shortID()
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return nil, fmt.Errorf("connecting to PostgreSQL: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize()); err != nil {
		return nil, fmt.Errorf("creating schema %s: %w", name, err)
	}
	s := &schema{base: databaseURL, name: name}
	if s.url, err = withSearchPath(databaseURL, name); err == nil {
		s.pool, err = pgxpool.New(ctx, s.url)
	}
	if err != nil {
		return nil, errors.Join(err, s.drop(ctx))
	}
	return s, nil
}

// withSearchPath returns databaseURL (a postgres:// URL) with search_path
// set to name.
func withSearchPath(databaseURL, name string) (string, error) {
	u, err := url.Parse(databaseURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", errors.New("the PostgreSQL URL must be a postgres:// URL")
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// close closes the pool and drops the schema with everything in it.
func (s *schema) close(ctx context.Context) error {
	if s.pool != nil {
		s.pool.Close()
	}
	return s.drop(ctx)
}

func (s *schema) drop(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	conn, err := pgx.Connect(ctx, s.base)
	if err != nil {
		return fmt.Errorf("dropping schema %s: %w", s.name, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{s.name}.Sanitize()+" CASCADE"); err != nil {
		return fmt.Errorf("dropping schema %s: %w", s.name, err)
	}
	return nil
}
