package middleware

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/migrations"
	"github.com/onceflow/onceflow/stores/postgres"
)

// pgTestTransactor begins a postgres.Unit per unit of work, as an
// application's Transactor would.
type pgTestTransactor struct {
	pool  *pgxpool.Pool
	store *postgres.Store
	// failCommit makes every commit roll back and fail instead.
	failCommit bool
}

func (tr pgTestTransactor) Begin(ctx context.Context) (Unit, error) {
	u, err := tr.store.Begin(ctx, tr.pool)
	if err != nil {
		return nil, err
	}
	if tr.failCommit {
		return failingCommit{u}, nil
	}
	return u, nil
}

// failingCommit is a unit whose commit fails, as a lost connection would
// make it: everything rolls back.
type failingCommit struct{ *postgres.Unit }

func (u failingCommit) Commit(ctx context.Context) error {
	_ = u.Rollback(ctx)
	return errors.New("commit failed: connection lost")
}

// newTxReceiver is a receiver in transaction mode on a fresh schema with an
// effects table, and a function that counts its rows.
func newTxReceiver(t *testing.T, failCommit bool) (*Receiver, *recorder, func() int) {
	t.Helper()
	url := testenv.PostgresSchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := migrations.UpURL(ctx, url); err != nil {
		t.Fatalf("migrating: %v", err)
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, "CREATE TABLE effects (key text NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	s, err := postgres.New(pool, postgres.Config{BatchSize: postgres.Unbatched})
	if err != nil {
		t.Fatal(err)
	}
	r, rec := newReceiver(t, Config{Store: s, Transactor: pgTestTransactor{pool: pool, store: s, failCommit: failCommit}})
	count := func() int {
		var n int
		if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM effects").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	return r, rec, count
}

// effect writes one row in the unit of work found in ctx.
func effect(ctx context.Context) error {
	tx, ok := postgres.TxFromContext(ctx)
	if !ok {
		return errors.New("no unit of work in the context")
	}
	_, err := tx.Exec(ctx, "INSERT INTO effects VALUES ('k')")
	return err
}

func TestTransactionModeRollsBackAFailedEffect(t *testing.T) {
	r, rec, count := newTxReceiver(t, false)
	ctx := t.Context()
	boom := errors.New("boom")
	_, err := r.Execute(ctx, "h", "k", []byte("fp"), func(ctx context.Context) ([]byte, error) {
		if err := effect(ctx); err != nil {
			return nil, err
		}
		return nil, boom
	})
	if !errors.Is(err, boom) || count() != 0 || rec.count(OutcomeFailed) != 1 {
		t.Fatalf("after a failure: err %v, %d effects, %d failed; want boom, 0, 1", err, count(), rec.count(OutcomeFailed))
	}

	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not go on")
			}
		}()
		_, _ = r.Execute(ctx, "h", "k", []byte("fp"), func(ctx context.Context) ([]byte, error) {
			if err := effect(ctx); err != nil {
				return nil, err
			}
			panic("handler panicked")
		})
	}()
	if count() != 0 {
		t.Fatalf("%d effects after a panic, want 0", count())
	}

	// The key is free again: the redelivery runs, once.
	for range 2 {
		if _, err := r.Execute(ctx, "h", "k", []byte("fp"), func(ctx context.Context) ([]byte, error) {
			return []byte("ok"), effect(ctx)
		}); err != nil {
			t.Fatal(err)
		}
	}
	if count() != 1 || rec.count(OutcomeProcessed) != 1 || rec.count(OutcomeDuplicate) != 1 {
		t.Fatalf("%d effects, %d processed, %d duplicates; want 1, 1, 1",
			count(), rec.count(OutcomeProcessed), rec.count(OutcomeDuplicate))
	}
}

func TestTransactionModeDuplicateWaitsForTheFirst(t *testing.T) {
	r, _, count := newTxReceiver(t, false)
	ctx := t.Context()
	entered, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := r.Execute(ctx, "h", "k", []byte("fp"), func(ctx context.Context) ([]byte, error) {
			close(entered)
			<-release
			return []byte("first"), effect(ctx)
		})
		first <- err
	}()
	<-entered
	second := make(chan Result, 1)
	go func() {
		res, err := r.Execute(ctx, "h", "k", []byte("fp"), func(ctx context.Context) ([]byte, error) {
			return []byte("second"), effect(ctx)
		})
		if err != nil {
			t.Errorf("duplicate: %v", err)
		}
		second <- res
	}()
	select {
	case res := <-second:
		t.Fatalf("the duplicate returned %v while the first was still running", res.Outcome)
	case <-time.After(200 * time.Millisecond): // it is blocked on the row
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-second:
		if res.Outcome != OutcomeDuplicate || string(res.Value) != "first" {
			t.Fatalf("duplicate = %v %q, want duplicate with the first result", res.Outcome, res.Value)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the duplicate never returned")
	}
	if count() != 1 {
		t.Fatalf("%d effects, want 1", count())
	}
}

// In transaction mode a failed commit rolls the handler's effects back, so
// the HTTP face must not send the handler's answer: the client gets a 503
// and its retry runs the handler again.
func TestTransactionModeHTTPCommitFailureIsNotAnswered(t *testing.T) {
	r, _, count := newTxReceiver(t, true)
	h := r.HTTP(WithAnonymous())(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if err := effect(req.Context()); err != nil {
			t.Error(err)
		}
		w.WriteHeader(http.StatusCreated)
	}))
	w := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/things", strings.NewReader("{}"))
	req.Header.Set(IdempotencyKeyHeader, "k-1")
	h.ServeHTTP(w, req)
	if w.Code != http.StatusServiceUnavailable {
		t.Errorf("status after a failed commit = %d, want 503", w.Code)
	}
	if n := count(); n != 0 {
		t.Errorf("%d effects survived the failed commit", n)
	}
}
