package flow

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/internal/testenv"
)

// TestModeRoundsCommitEveryEffectOnce runs a round in each mode: the
// handler runs once per message, and each message leaves exactly one
// effect row and one produced message.
func TestModeRoundsCommitEveryEffectOnce(t *testing.T) {
	testenv.Postgres(t) // skips when PostgreSQL is unreachable
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const n = 200
	b, err := NewModeBench(ctx, ModeOptions{PostgresURL: testenv.PostgresURL(), Messages: n})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	}()
	for _, mode := range []Mode{LeaseMode, TransactionMode} {
		tl, prefix, err := b.round(ctx, mode)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		for i, c := range tl.executionCounts() {
			if c != 1 {
				t.Fatalf("%s: message %d handled %d times, want 1", mode, i, c)
			}
		}
		var effects, produced int
		round := prefix[2 : len(prefix)-1] // "bm<id>." -> "<id>"
		if err := b.schema.pool.QueryRow(ctx, "SELECT count(*) FROM "+effectsTable+" WHERE key LIKE $1", round+"-%").Scan(&effects); err != nil {
			t.Fatal(err)
		}
		table := pgx.Identifier{"watermill_" + prefix + outputTopic}.Sanitize()
		if err := b.schema.pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&produced); err != nil {
			t.Fatal(err)
		}
		if effects != n || produced != n {
			t.Errorf("%s: %d effects and %d produced messages, want %d of each", mode, effects, produced, n)
		}
	}
	if _, err := b.Round(ctx, Mode("other")); err == nil {
		t.Error("an unknown mode was accepted")
	}
}
