package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/poison"
	"github.com/onceflow/onceflow/poison/poisontest"
	"github.com/onceflow/onceflow/poison/postgres"
)

func TestConformance(t *testing.T) {
	poisontest.Run(t, poisontest.Harness{
		New: func(t *testing.T, limits poison.Limits, now func() time.Time) poison.Store {
			return mustNew(t, testenv.MigratedPostgres(t), postgres.Config{Limits: limits, Now: now})
		},
	})
}

func mustNew(t testing.TB, db postgres.Querier, cfg postgres.Config) *postgres.Store {
	t.Helper()
	s, err := postgres.New(db, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// New refuses no database and invalid limits, and takes zero ones as the
// defaults, without touching the database.
func TestNewValidates(t *testing.T) {
	var pool *pgxpool.Pool // never used: New does not connect
	if _, err := postgres.New(nil, postgres.Config{}); err == nil {
		t.Error("New(nil) succeeded")
	}
	if _, err := postgres.New(pool, postgres.Config{}); err != nil {
		t.Errorf("New with zero limits = %v, want the defaults", err)
	}
	for _, l := range []poison.Limits{
		{MaxMessages: -1, MaxBytes: 1, Retention: time.Hour},
		{MaxMessages: 1, MaxBytes: 0, Retention: time.Hour},
		{MaxMessages: 1, MaxBytes: 1},
	} {
		if _, err := postgres.New(pool, postgres.Config{Limits: l}); err == nil {
			t.Errorf("New with limits %+v succeeded", l)
		}
	}
}

// clock is a fixed time, for the tests of this file (none changes it).
func clock(at time.Time) func() time.Time { return func() time.Time { return at } }

var base = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// model is a message of fill: handlers, classes and states in turn,
// parked step apart from base.
func model(i int, step time.Duration) poison.Message {
	handler := []string{"charge", "notify", "ship"}[i%3]
	key := fmt.Sprintf("key-%d", i)
	m := poison.Message{UUID: fmt.Sprintf("uuid-%d", i), Topic: handler + ".topic", Handler: handler,
		Reason: "boom " + key, Class: poison.Classes[i%len(poison.Classes)], Key: key,
		Metadata: map[string]string{poison.KeyKey: key, poison.ReasonKey: "boom " + key},
		Payload:  []byte(`{"n":` + strconv.Itoa(i) + `}`), ParkedAt: base.Add(time.Duration(i) * step), State: poison.Parked}
	switch {
	case i%7 == 0:
		at := m.ParkedAt.Add(time.Minute)
		m.State, m.SettledBy, m.SettledAt = poison.Discarded, "op", &at
	case i%11 == 0:
		at := m.ParkedAt.Add(time.Second)
		m.State, m.SettledBy, m.SettledAt = poison.Redriven, "alice", &at
	}
	return m
}

// fill copies n messages of model into pool's table in one COPY, in order,
// and returns them with their IDs.
func fill(t testing.TB, pool *pgxpool.Pool, n int, step time.Duration) []poison.Message {
	t.Helper()
	ctx := testCtx(t)
	ms := make([]poison.Message, n)
	for i := range ms {
		ms[i] = model(i, step)
	}
	copied, err := pool.CopyFrom(ctx, pgx.Identifier{postgres.Table},
		[]string{"uuid", "topic", "handler", "reason", "class", "idem_key", "metadata", "payload", "size", "parked_at", "state", "settled_by", "settled_at"},
		pgx.CopyFromSlice(n, func(i int) ([]any, error) {
			m := ms[i]
			var by *string
			if m.SettledBy != "" {
				by = &m.SettledBy
			}
			return []any{m.UUID, m.Topic, m.Handler, m.Reason, string(m.Class), m.Key, m.Metadata, m.Payload,
				int64(m.Size()), m.ParkedAt, string(m.State), by, m.SettledAt}, nil
		}))
	if err != nil || copied != int64(n) {
		t.Fatalf("copying %d messages: %d, %v", n, copied, err)
	}
	rows, err := pool.Query(ctx, "SELECT id FROM "+postgres.Table+" ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(ids) != n {
		t.Fatalf("reading the ids back: %d of %d, %v", len(ids), n, err)
	}
	for i := range ms {
		ms[i].ID = strconv.FormatInt(ids[i], 10)
	}
	return ms
}

// want is what List should return of ms (in parking order) for f, at most
// limit of them, the retention starting at cutoff.
func want(ms []poison.Message, f poison.Filter, cutoff time.Time, limit int) []poison.Message {
	var out []poison.Message
	after := int64(-1)
	if f.After != "" {
		after, _ = strconv.ParseInt(f.After, 10, 64)
	}
	for _, m := range slices.Backward(ms) {
		id, _ := strconv.ParseInt(m.ID, 10, 64)
		if f.Matches(m) && !m.ParkedAt.Before(cutoff) && (after < 0 || id < after) {
			out = append(out, m)
			if len(out) == limit {
				break
			}
		}
	}
	return out
}

func ids(ms []poison.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID + "/" + m.UUID
	}
	return out
}

// sameMessage reports how got differs from want, field by field.
func sameMessage(got, want poison.Message) string {
	settled := func(at *time.Time) string {
		if at == nil {
			return "-"
		}
		return at.UTC().Format(time.RFC3339Nano)
	}
	if got.ID != want.ID || got.UUID != want.UUID || got.Topic != want.Topic || got.Handler != want.Handler ||
		got.Reason != want.Reason || got.Class != want.Class || got.Key != want.Key ||
		!maps.Equal(got.Metadata, want.Metadata) || string(got.Payload) != string(want.Payload) ||
		!got.ParkedAt.Equal(want.ParkedAt) || got.State != want.State || got.SettledBy != want.SettledBy ||
		settled(got.SettledAt) != settled(want.SettledAt) {
		return fmt.Sprintf("got %+v (settled %s),\nwant %+v (settled %s)", got, settled(got.SettledAt), want, settled(want.SettledAt))
	}
	return ""
}

// With 10,000 messages, a third of them past their retention and a
// quarter settled, List's first page and pages deep in (by cursor, by
// time, by filter) are the right messages, whole; Summary counts what is
// left; and a Park deletes one batch of the expired ones.
func TestListTenThousand(t *testing.T) {
	const n = 10_000
	const step = 3 * time.Minute
	pool := testenv.MigratedPostgres(t)
	ms := fill(t, pool, n, step)
	now := base.Add(n * step)
	limits := poison.DefaultLimits
	cutoff := now.Add(-limits.Retention) // 6,720 of the 10,000 are within it
	s := mustNew(t, pool, postgres.Config{Limits: limits, Now: clock(now)})
	ctx := testCtx(t)

	check := func(f poison.Filter) ([]poison.Message, string) {
		t.Helper()
		got, next, err := s.List(ctx, f)
		if err != nil {
			t.Fatalf("List(%+v): %v", f, err)
		}
		exp := want(ms, f, cutoff, f.PageSize()+1)
		wantNext := ""
		if len(exp) > f.PageSize() {
			exp = exp[:f.PageSize()]
			wantNext = exp[len(exp)-1].ID
		}
		if !slices.Equal(ids(got), ids(exp)) {
			t.Fatalf("List(%+v) = %d messages %.200v,\nwant %d %.200v", f, len(got), ids(got), len(exp), ids(exp))
		}
		for i := range got {
			if got[i].Payload != nil {
				t.Fatalf("List(%+v)[%d] has a payload", f, i)
			}
			want := exp[i]
			want.Payload = nil // List leaves payloads out
			if diff := sameMessage(got[i], want); diff != "" {
				t.Fatalf("List(%+v)[%d]: %s", f, i, diff)
			}
		}
		if next != wantNext {
			t.Fatalf("List(%+v) next = %q, want %q", f, next, wantNext)
		}
		return got, next
	}

	first, _ := check(poison.Filter{})
	if len(first) != poison.DefaultLimit || first[0].UUID != "uuid-9998" { // 9999 was redriven
		t.Fatalf("first page: %d messages from %s, want %d from uuid-9998", len(first), first[0].UUID, poison.DefaultLimit)
	}

	// Every page by cursor, to the last one within the retention.
	var all []poison.Message
	f := poison.Filter{Limit: 200}
	pages := 0
	for {
		got, next := check(f)
		all = append(all, got...)
		pages++
		if next == "" {
			break
		}
		f.After = next
	}
	parked := want(ms, poison.Filter{}, cutoff, n)
	if len(all) != len(parked) || pages != (len(parked)+199)/200 {
		t.Fatalf("cursors read %d messages in %d pages, want %d", len(all), pages, len(parked))
	}
	if oldest := all[len(all)-1]; oldest.ParkedAt.Before(cutoff) {
		t.Fatalf("the last page holds %s, past its retention", oldest.UUID)
	}

	// Pages deep in by time, by filter, by both, with and without a cursor.
	mid := base.Add(6000 * step)
	check(poison.Filter{Since: mid, Until: mid.Add(100 * step), State: poison.All, Limit: poison.MaxLimit})
	check(poison.Filter{Until: mid, Limit: 30})
	check(poison.Filter{Since: base, Until: cutoff.Add(10 * step), State: poison.All})
	_, next := check(poison.Filter{Handler: "notify", Class: poison.KeyReused, Until: mid, Limit: 7})
	check(poison.Filter{Handler: "notify", Class: poison.KeyReused, Until: mid, Limit: 7, After: next})
	check(poison.Filter{Topic: "ship.topic", State: poison.Discarded, After: ms[8000].ID, Limit: 100})
	check(poison.Filter{State: poison.Redriven, Since: mid, Limit: poison.MaxLimit + 1})
	check(poison.Filter{Handler: "nobody"})

	groups, err := s.Summary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, m := range parked {
		counts[m.Handler+"/"+string(m.Class)]++
	}
	total := 0
	for _, g := range groups {
		total += g.Count
		if g.Count != counts[g.Handler+"/"+string(g.Class)] || g.Oldest.Before(cutoff) || g.Newest.After(now) {
			t.Errorf("group %+v: want %d parked within the retention", g, counts[g.Handler+"/"+string(g.Class)])
		}
	}
	if len(groups) != len(counts) || total != len(parked) {
		t.Errorf("Summary has %d groups of %d messages, want %d of %d", len(groups), total, len(counts), len(parked))
	}

	// A Park comes first, and deletes one batch of the 3,280 expired rows.
	m := model(n, step)
	id, err := s.Park(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	m.ID = id
	ms = append(ms, m)
	if got, _ := check(poison.Filter{Limit: 1}); got[0].ID != id {
		t.Fatalf("after Park the first page starts with %s, want the new %s", got[0].ID, id)
	}
	var rows, expired int
	if err := pool.QueryRow(ctx, "SELECT count(*), count(*) FILTER (WHERE parked_at < $1) FROM "+postgres.Table, cutoff).Scan(&rows, &expired); err != nil {
		t.Fatal(err)
	}
	if rows != n+1-1000 || expired != n-6720-1000 {
		t.Errorf("after one Park the table holds %d rows, %d expired; want %d, %d", rows, expired, n+1-1000, n-6720-1000)
	}
}

// BenchmarkList reads the first page of 50 parked messages of 10,000, and
// a filtered page and a page deep in by cursor.
func BenchmarkList(b *testing.B) {
	const n = 10_000
	pool := testenv.MigratedPostgres(b)
	ms := fill(b, pool, n, time.Second)
	// A fresh ANALYZE, as autovacuum would give the table before long.
	if _, err := pool.Exec(b.Context(), "ANALYZE "+postgres.Table); err != nil {
		b.Fatal(err)
	}
	s := mustNew(b, pool, postgres.Config{Now: clock(base.Add(n * time.Second))})
	for _, bc := range []struct {
		name string
		f    poison.Filter
	}{
		{"first", poison.Filter{}},
		{"handler+class", poison.Filter{Handler: "notify", Class: poison.Classes[1]}}, // fill's message 1, and every 6th after it
		{"deep", poison.Filter{After: ms[n/2].ID}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := b.Context()
			for b.Loop() {
				got, _, err := s.List(ctx, bc.f)
				if err != nil {
					b.Fatal(err)
				}
				if len(got) != poison.DefaultLimit {
					b.Fatalf("List(%+v) returned %d messages, want %d", bc.f, len(got), poison.DefaultLimit)
				}
			}
		})
	}
}

// A message whose text PostgreSQL cannot hold is refused with an error of
// its own, not ErrFull, and nothing is kept.
func TestParkRefusesWhatTextCannotHold(t *testing.T) {
	s := mustNew(t, testenv.MigratedPostgres(t), postgres.Config{Now: clock(base)})
	ctx := testCtx(t)
	for name, change := range map[string]func(*poison.Message){
		"reason with NUL":           func(m *poison.Message) { m.Reason = "bad\x00reason" },
		"metadata not UTF-8":        func(m *poison.Message) { m.Metadata["header"] = "\xff\xfe" },
		"metadata key not UTF-8":    func(m *poison.Message) { m.Metadata["\xff"] = "v" },
		"metadata value with NUL":   func(m *poison.Message) { m.Metadata["header"] = "a\x00b" },
		"handler not UTF-8":         func(m *poison.Message) { m.Handler = "h\xc3" },
		"idempotency key with NULs": func(m *poison.Message) { m.Key = "\x00\x00" },
	} {
		m := model(1, time.Second)
		change(&m)
		if _, err := s.Park(ctx, m); err == nil || errors.Is(err, poison.ErrFull) || !strings.Contains(err.Error(), "UTF-8") {
			t.Errorf("Park of a message with a %s = %v, want an error naming UTF-8", name, err)
		}
	}
	m := model(1, time.Second)
	m.Payload = []byte{0, 0xff, 0}
	id, err := s.Park(ctx, m)
	if err != nil {
		t.Fatalf("Park of a binary payload: %v", err)
	}
	got, err := s.Get(ctx, id)
	if err != nil || string(got.Payload) != string(m.Payload) {
		t.Fatalf("Get = %q, %v; want the payload %q", got.Payload, err, m.Payload)
	}
	if ms, _, err := s.List(ctx, poison.Filter{State: poison.All}); err != nil || len(ms) != 1 {
		t.Errorf("the store holds %d messages (%v), want the one binary payload", len(ms), err)
	}
}

// Park keeps a message Parked whatever state it comes in, at Now when it
// has no ParkedAt; IDs not in canonical form are not found; a cursor List
// never returned is an error.
func TestParkDefaultsAndIDs(t *testing.T) {
	s := mustNew(t, testenv.MigratedPostgres(t), postgres.Config{Now: clock(base.Add(1500 * time.Nanosecond))})
	ctx := testCtx(t)
	m := model(7, time.Second) // a discarded one
	m.ParkedAt = time.Time{}
	m.Metadata, m.Payload = nil, nil
	id, err := s.Park(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != poison.Parked || got.SettledBy != "" || got.SettledAt != nil ||
		!got.ParkedAt.Equal(base.Add(time.Microsecond)) || got.ParkedAt.Location() != time.UTC ||
		got.Metadata == nil || len(got.Metadata) != 0 || len(got.Payload) != 0 {
		t.Errorf("Get = %+v: want parked at Now to the microsecond, in UTC, with empty metadata and payload", got)
	}
	for _, other := range []string{"+" + id, "0" + id, " " + id, id + ".0", "-" + id, ""} {
		if _, err := s.Get(ctx, other); !errors.Is(err, poison.ErrNotFound) {
			t.Errorf("Get(%q) = %v, want ErrNotFound", other, err)
		}
	}
	if _, _, err := s.List(ctx, poison.Filter{After: "x" + id}); err == nil || !strings.Contains(err.Error(), "cursor") {
		t.Errorf("List with a cursor it never returned = %v, want an error naming the cursor", err)
	}
	if _, err := s.Settle(ctx, id, poison.Settlement{State: poison.Parked, By: "op"}); err == nil || errors.Is(err, poison.ErrSettled) {
		t.Errorf("Settle to Parked = %v, want it refused", err)
	}
	settled, err := s.Settle(ctx, id, poison.Settlement{State: poison.Discarded, By: "op"})
	if err != nil || settled.SettledAt == nil || !settled.SettledAt.Equal(base.Add(time.Microsecond)) {
		t.Errorf("Settle without At = %+v, %v; want it settled at Now", settled, err)
	}
}

// A Store on a caller's transaction parks in it: rolled back, nothing is
// kept. One in a REPEATABLE READ transaction refuses to Park: its snapshot
// would predate the lock.
func TestParkInTransaction(t *testing.T) {
	pool := testenv.MigratedPostgres(t)
	ctx := testCtx(t)
	s := mustNew(t, pool, postgres.Config{Now: clock(base)})
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id, err := mustNew(t, tx, postgres.Config{Now: clock(base)}).Park(ctx, model(1, time.Second))
	if err != nil {
		t.Fatalf("Park in a transaction: %v", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, id); !errors.Is(err, poison.ErrNotFound) {
		t.Errorf("Get of a Park rolled back = %v, want ErrNotFound", err)
	}

	rr, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rr.Rollback(ctx) }()
	if _, err := mustNew(t, rr, postgres.Config{Now: clock(base)}).Park(ctx, model(2, time.Second)); err == nil || !strings.Contains(err.Error(), "read committed") {
		t.Errorf("Park in a REPEATABLE READ transaction = %v, want it refused", err)
	}
}

// With the database out of reach every method fails with an error that
// names the store and is none of the contract's.
func TestUnavailable(t *testing.T) {
	testenv.Integration(t)
	pool, err := pgxpool.New(context.Background(),
		fmt.Sprintf("postgres://postgres@%s/test?sslmode=disable&connect_timeout=1", testenv.ClosedAddr(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := mustNew(t, pool, postgres.Config{})
	ctx := testCtx(t)
	_, parkErr := s.Park(ctx, model(1, time.Second))
	_, getErr := s.Get(ctx, "1")
	_, _, listErr := s.List(ctx, poison.Filter{})
	_, settleErr := s.Settle(ctx, "1", poison.Settlement{State: poison.Redriven, By: "op", At: base})
	_, summaryErr := s.Summary(ctx)
	for op, err := range map[string]error{"Park": parkErr, "Get": getErr, "List": listErr, "Settle": settleErr, "Summary": summaryErr} {
		if err == nil || errors.Is(err, poison.ErrNotFound) || errors.Is(err, poison.ErrSettled) || errors.Is(err, poison.ErrFull) ||
			!strings.HasPrefix(err.Error(), "poison/postgres: ") {
			t.Errorf("%s with the database out of reach = %v, want a poison/postgres error of the connection", op, err)
		}
	}

	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Get(canceled, "1"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a canceled context = %v, want it to unwrap to context.Canceled", err)
	}
}
