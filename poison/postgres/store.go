// Package postgres is the PostgreSQL implementation of [poison.Store], on
// pgx.
//
// The parked messages live in one table, poisoned_messages (see package
// migrations, version 2, which creates it in both records layouts),
// resolved through the connection's search_path like the records table.
// A row's id, a bigint identity, is the message's ID as a decimal string.
//
// What the store guarantees:
//   - Park is race-free against the bounds, across goroutines and processes:
//     it runs in a READ COMMITTED transaction whose first statement takes a
//     transaction-scoped advisory lock of the table (lockClass, and the
//     table's oid, so that deployments in other schemas never wait on it),
//     and whose second, under the lock, deletes a batch of expired rows,
//     counts and sums the sizes of the rest and inserts m only if it fits.
//     Parks on one table therefore run one at a time, each sees every Park
//     committed before it, and no two take the last room: with room for 40,
//     60 racing Parks park exactly 40 and return ErrFull for the rest.
//   - Because ids are drawn under that lock, they increase in commit order
//     as well as in parking order: once a List page has been read, no
//     message can appear later with an id below its cursor, so following
//     cursors (ids below the last one returned) neither skips nor repeats a
//     message; a newer one shows on a fresh first page.
//   - Every other method is exactly one statement, atomic on its own. Settle
//     is a conditional UPDATE of a parked row: of two concurrent Settles of
//     one message exactly one settles it and the other gets ErrSettled with
//     the winner's settlement.
//   - Retention: a row parked before now - Limits.Retention is invisible to
//     Get, List, Settle and Summary from that instant, whatever its state,
//     and no longer counts against the bounds; Park deletes such rows, at
//     most expiredBatch per call, so the table shrinks as messages are
//     parked and an idle store keeps expired rows on disk, unseen, until
//     the next Park.
//
// Time is the Go clock of Config.Now, not PostgreSQL's now(): a message's
// ParkedAt is set by its caller (poison.FromMessage) and retention is
// measured against the same clock. Times are stored, compared and returned
// at microsecond precision (truncated), in UTC.
//
// Errors: poison.ErrNotFound, poison.ErrSettled and poison.ErrFull are
// returned as themselves. Anything else — a connection refused or reset, a
// missing table, a canceled context — is returned as
// "poison/postgres: <op>: <cause>", which unwraps to the driver's cause
// (*pgconn.PgError, *pgconn.ConnectError, ...) and, when ctx is done, to
// ctx's error; it is never mistaken for one of the three.
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/poison"
)

// Table is the table of parked messages the migrations create.
const Table = "poisoned_messages"

// Querier runs SQL statements and transactions. *pgxpool.Pool, *pgx.Conn
// and pgx.Tx satisfy it. A Store on a pgx.Tx runs its statements in that
// transaction (Park in a savepoint of it), which must then be READ
// COMMITTED, and holds the Park lock until that transaction ends.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

var (
	_ Querier = (*pgxpool.Pool)(nil)
	_ Querier = (*pgx.Conn)(nil)
	_ Querier = pgx.Tx(nil)
)

// txBeginner is a Querier that can choose its transaction's isolation
// level, as a pool and a connection can.
type txBeginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// Config configures a Store. The zero value is ready to use.
type Config struct {
	// Limits bound the store. The zero value is poison.DefaultLimits;
	// any other must have every limit positive.
	Limits poison.Limits
	// Now is the clock retention is measured with, and the time a Park
	// of a message without ParkedAt, or a Settle without At, records.
	// Default time.Now.
	Now func() time.Time
}

// Store is a [poison.Store] on PostgreSQL. It is safe for concurrent use
// when its Querier is (a pool is; a pgx.Conn or pgx.Tx is not). It owns
// nothing: closing the pool is the caller's business.
type Store struct {
	db     Querier
	limits poison.Limits
	now    func() time.Time
	lock   int32
}

var _ poison.Store = (*Store)(nil)

// New returns a Store that runs its statements on db, typically a
// *pgxpool.Pool whose search_path reaches the migrated table. It fails
// only when db is nil or cfg.Limits is neither zero nor valid; it does not
// touch the database.
func New(db Querier, cfg Config) (*Store, error) {
	if db == nil {
		return nil, errors.New("poison/postgres: missing database")
	}
	limits := cfg.Limits
	if limits == (poison.Limits{}) {
		limits = poison.DefaultLimits
	}
	if err := limits.Validate(); err != nil {
		return nil, err
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Store{db: db, limits: limits, now: now, lock: lockClass(Table)}, nil
}

// lockClass is the first key of the Park advisory lock, derived from the
// table's name; the second is the table's oid (lockSQL).
func lockClass(table string) int32 {
	h := fnv.New32a()
	_, _ = fmt.Fprintf(h, "onceflow/poison\x00%s", table)
	return int32(h.Sum32())
}

// expiredBatch bounds the expired rows one Park deletes, and so the time
// it holds the lock.
const expiredBatch = 1000

// columns are the columns scan reads, in its order.
const columns = `id, uuid, topic, handler, reason, class, idem_key, metadata, payload, parked_at, state, settled_by, settled_at`

// listColumns are columns as List reads them: without the payload, which
// scan reads as nil.
var listColumns = strings.Replace(columns, "payload", "NULL::bytea", 1)

// lockSQL takes the Park lock: $1 is lockClass, $2 the table's name,
// resolved through search_path (an error if it does not exist). It returns
// the transaction's isolation, which must be READ COMMITTED so that the
// next statement's snapshot, taken once the lock is granted, sees every
// Park committed before it.
const lockSQL = `SELECT current_setting('transaction_isolation'), pg_advisory_xact_lock($1::int, $2::text::regclass::oid::int)`

// readCommitted is current_setting('transaction_isolation') under READ
// COMMITTED.
const readCommitted = "read committed"

// parkSQL runs under the lock: it deletes at most $2 rows parked before
// the cutoff $1, and inserts the message ($3...) only if the rows parked
// at or after the cutoff, with it, stay within $12 messages and $13 bytes.
// It returns the new id, or no row when the message does not fit. (The
// DELETE's rows are still seen by the counting, which skips them by the
// same cutoff.)
const parkSQL = `
WITH gone AS (
	DELETE FROM ` + Table + ` WHERE id IN (
		SELECT id FROM ` + Table + ` WHERE parked_at < $1 ORDER BY parked_at LIMIT $2)
), used AS (
	SELECT count(*) AS n, coalesce(sum(size), 0) AS bytes FROM ` + Table + ` WHERE parked_at >= $1
)
INSERT INTO ` + Table + ` (uuid, topic, handler, reason, class, idem_key, metadata, payload, size, parked_at, state)
SELECT $3, $4, $5, $6, $7, $8, $9, $10, $11::bigint, $14, 'parked'
FROM used WHERE used.n < $12::bigint AND used.bytes + $11::bigint <= $13::bigint
RETURNING id`

const getSQL = `SELECT ` + columns + ` FROM ` + Table + ` WHERE id = $1 AND parked_at >= $2`

const settleSQL = `
UPDATE ` + Table + ` SET state = $3, settled_by = $4, settled_at = $5
WHERE id = $1 AND parked_at >= $2 AND state = 'parked'
RETURNING ` + columns

const summarySQL = `
SELECT handler, class, count(*), min(parked_at), max(parked_at) FROM ` + Table + `
WHERE state = 'parked' AND parked_at >= $1
GROUP BY handler, class ORDER BY handler, class`

// Park keeps m under a new ID, in the Parked state whatever m's State and
// settlement say, parked at m.ParkedAt (Now when zero). It returns ErrFull,
// and keeps nothing, when the messages parked within the retention, with
// m, would be more than Limits.MaxMessages or their sizes more than
// Limits.MaxBytes. PostgreSQL's text holds no NUL and no invalid UTF-8:
// a message with such a string field, metadata included, is refused with
// an error (not ErrFull), nothing kept.
func (s *Store) Park(ctx context.Context, m poison.Message) (string, error) {
	if err := checkText(m); err != nil {
		return "", err
	}
	md := m.Metadata
	if md == nil {
		md = map[string]string{}
	}
	metadata, err := json.Marshal(md)
	if err != nil {
		return "", fmt.Errorf("poison/postgres: park: encoding metadata: %w", err)
	}
	payload := m.Payload
	if payload == nil {
		payload = []byte{}
	}
	now := s.now()
	at := m.ParkedAt
	if at.IsZero() {
		at = now
	}
	cutoff := s.cutoff(now)
	size := int64(m.Size())

	tx, err := s.begin(ctx)
	if err != nil {
		return "", s.fail(ctx, "park", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var isolation string
	if err := tx.QueryRow(ctx, lockSQL, s.lock, Table).Scan(&isolation, nil); err != nil {
		return "", s.fail(ctx, "park", err)
	}
	if isolation != readCommitted {
		return "", fmt.Errorf("poison/postgres: park: the transaction is %s: it must be %s", isolation, readCommitted)
	}
	var id int64
	err = tx.QueryRow(ctx, parkSQL, cutoff, expiredBatch,
		m.UUID, m.Topic, m.Handler, m.Reason, string(m.Class), m.Key, metadata, payload, size,
		int64(s.limits.MaxMessages), s.limits.MaxBytes, micro(at)).Scan(&id)
	full := errors.Is(err, pgx.ErrNoRows)
	if err != nil && !full {
		return "", s.fail(ctx, "park", err)
	}
	// Commit even when full: the expired rows stay deleted.
	if err := tx.Commit(ctx); err != nil {
		return "", s.fail(ctx, "park", err)
	}
	if full {
		return "", poison.ErrFull
	}
	return strconv.FormatInt(id, 10), nil
}

// begin starts Park's transaction, READ COMMITTED when db can say so.
func (s *Store) begin(ctx context.Context) (pgx.Tx, error) {
	if b, ok := s.db.(txBeginner); ok {
		return b.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	}
	return s.db.Begin(ctx)
}

// Get returns the message id names. An id that is not one Park returned
// (not a positive decimal number in canonical form) is ErrNotFound, as is
// one past its retention.
func (s *Store) Get(ctx context.Context, id string) (poison.Message, error) {
	n, ok := parseID(id)
	if !ok {
		return poison.Message{}, poison.ErrNotFound
	}
	m, err := scan(s.db.QueryRow(ctx, getSQL, n, s.cutoff(s.now())))
	if errors.Is(err, pgx.ErrNoRows) {
		return poison.Message{}, poison.ErrNotFound
	}
	if err != nil {
		return poison.Message{}, s.fail(ctx, "get", err)
	}
	return m, nil
}

// List returns the messages within the retention that f selects (as
// f.Matches does), newest first by ID, at most f.PageSize() of them, and
// the cursor of the next page: the last ID returned when more messages
// follow, else empty. f.After must be empty or a cursor List returned;
// the page then holds the messages below it.
func (s *Store) List(ctx context.Context, f poison.Filter) ([]poison.Message, string, error) {
	limit := f.PageSize()
	q := listQuery(f, s.cutoff(s.now()), limit+1)
	if q.err != nil {
		return nil, "", q.err
	}
	rows, err := s.db.Query(ctx, q.sql, q.args...)
	if err != nil {
		return nil, "", s.fail(ctx, "list", err)
	}
	defer rows.Close()
	var out []poison.Message
	for rows.Next() {
		m, err := scan(rows)
		if err != nil {
			return nil, "", s.fail(ctx, "list", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, "", s.fail(ctx, "list", err)
	}
	if len(out) > limit {
		out = out[:limit]
		return out, out[limit-1].ID, nil
	}
	return out, "", nil
}

// query is a statement and its arguments.
type query struct {
	sql  string
	args []any
	err  error
}

// listQuery builds List's statement from fixed clauses, one per filter
// field that is set, every value a parameter: a handful of texts, each
// planned for the indexes it can use.
func listQuery(f poison.Filter, cutoff time.Time, limit int) query {
	q := query{args: []any{cutoff}}
	where := []string{"parked_at >= $1"}
	add := func(clause string, v any) {
		q.args = append(q.args, v)
		where = append(where, fmt.Sprintf(clause, len(q.args)))
	}
	if f.Handler != "" {
		add("handler = $%d", f.Handler)
	}
	if f.Topic != "" {
		add("topic = $%d", f.Topic)
	}
	if f.Class != "" {
		add("class = $%d", string(f.Class))
	}
	switch state := f.State; state {
	case poison.All:
	case "":
		add("state = $%d", string(poison.Parked))
	default:
		add("state = $%d", string(state))
	}
	if !f.Since.IsZero() {
		add("parked_at >= $%d", micro(f.Since))
	}
	if !f.Until.IsZero() {
		add("parked_at < $%d", micro(f.Until))
	}
	if f.After != "" {
		after, ok := parseID(f.After)
		if !ok {
			q.err = fmt.Errorf("poison/postgres: list: cursor %q is not one List returned", f.After)
			return q
		}
		add("id < $%d", after)
	}
	q.args = append(q.args, limit)
	q.sql = fmt.Sprintf("SELECT %s FROM %s WHERE %s ORDER BY id DESC LIMIT $%d",
		listColumns, Table, strings.Join(where, " AND "), len(q.args))
	return q
}

// Settle marks the parked message id s.State (Redriven or Discarded) by
// s.By at s.At (Now when zero), in one conditional UPDATE, and returns it
// as settled. A message no longer parked is left alone: ErrSettled, with
// the message as it is. An id that is unknown or past its retention is
// ErrNotFound.
func (s *Store) Settle(ctx context.Context, id string, st poison.Settlement) (poison.Message, error) {
	if st.State != poison.Redriven && st.State != poison.Discarded {
		return poison.Message{}, fmt.Errorf("poison/postgres: settle: state %q is neither %s nor %s", st.State, poison.Redriven, poison.Discarded)
	}
	if err := checkString("settled by", st.By); err != nil {
		return poison.Message{}, err
	}
	n, ok := parseID(id)
	if !ok {
		return poison.Message{}, poison.ErrNotFound
	}
	now := s.now()
	at := st.At
	if at.IsZero() {
		at = now
	}
	m, err := scan(s.db.QueryRow(ctx, settleSQL, n, s.cutoff(now), string(st.State), st.By, micro(at)))
	if err == nil {
		return m, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return poison.Message{}, s.fail(ctx, "settle", err)
	}
	// Not parked, or not there: read what there is. The row can only have
	// left parked, never come back to it, so this is the state that refused
	// the UPDATE or a later one.
	m, err = scan(s.db.QueryRow(ctx, getSQL, n, s.cutoff(now)))
	if errors.Is(err, pgx.ErrNoRows) {
		return poison.Message{}, poison.ErrNotFound
	}
	if err != nil {
		return poison.Message{}, s.fail(ctx, "settle", err)
	}
	return m, poison.ErrSettled
}

// Summary counts the parked messages within the retention by handler and
// class, with the oldest and newest ParkedAt of each group, ordered by
// handler then class. No parked message: an empty slice.
func (s *Store) Summary(ctx context.Context) ([]poison.Group, error) {
	rows, err := s.db.Query(ctx, summarySQL, s.cutoff(s.now()))
	if err != nil {
		return nil, s.fail(ctx, "summary", err)
	}
	defer rows.Close()
	groups := []poison.Group{}
	for rows.Next() {
		var g poison.Group
		var class string
		var count int64
		if err := rows.Scan(&g.Handler, &class, &count, &g.Oldest, &g.Newest); err != nil {
			return nil, s.fail(ctx, "summary", err)
		}
		g.Class, g.Count, g.Oldest, g.Newest = poison.Class(class), int(count), g.Oldest.UTC(), g.Newest.UTC()
		groups = append(groups, g)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(ctx, "summary", err)
	}
	return groups, nil
}

// cutoff is the oldest ParkedAt within the retention at now.
func (s *Store) cutoff(now time.Time) time.Time { return micro(now.Add(-s.limits.Retention)) }

// fail wraps err, of the driver during op, so that it names the store and
// op and unwraps to err and, when ctx is done, to ctx's error.
func (s *Store) fail(ctx context.Context, op string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		return fmt.Errorf("poison/postgres: %s: %w: %w", op, ctxErr, err)
	}
	return fmt.Errorf("poison/postgres: %s: %w", op, err)
}

// micro is t truncated to PostgreSQL's precision, in UTC.
func micro(t time.Time) time.Time { return t.Truncate(time.Microsecond).UTC() }

// parseID returns the row id of a message ID: a positive decimal number
// written as FormatInt writes it, so that each row has exactly one ID.
func parseID(id string) (int64, bool) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 || strconv.FormatInt(n, 10) != id {
		return 0, false
	}
	return n, true
}

// scan reads a row of columns.
func scan(row pgx.Row) (poison.Message, error) {
	var m poison.Message
	var id int64
	var class, state string
	var metadata []byte
	var settledBy *string
	var settledAt *time.Time
	if err := row.Scan(&id, &m.UUID, &m.Topic, &m.Handler, &m.Reason, &class, &m.Key,
		&metadata, &m.Payload, &m.ParkedAt, &state, &settledBy, &settledAt); err != nil {
		return poison.Message{}, err
	}
	if err := json.Unmarshal(metadata, &m.Metadata); err != nil {
		return poison.Message{}, fmt.Errorf("decoding the metadata of message %d: %w", id, err)
	}
	if m.Metadata == nil {
		m.Metadata = map[string]string{}
	}
	m.ID, m.Class, m.State, m.ParkedAt = strconv.FormatInt(id, 10), poison.Class(class), poison.State(state), m.ParkedAt.UTC()
	if settledBy != nil {
		m.SettledBy = *settledBy
	}
	if settledAt != nil {
		at := settledAt.UTC()
		m.SettledAt = &at
	}
	return m, nil
}

// checkText reports a string field of m that PostgreSQL's text and jsonb
// cannot hold as it is.
func checkText(m poison.Message) error {
	for _, f := range []struct{ name, v string }{
		{"uuid", m.UUID}, {"topic", m.Topic}, {"handler", m.Handler}, {"reason", m.Reason},
		{"class", string(m.Class)}, {"key", m.Key},
	} {
		if err := checkString(f.name, f.v); err != nil {
			return err
		}
	}
	for k, v := range m.Metadata {
		if err := checkString("metadata key", k); err != nil {
			return err
		}
		if err := checkString("metadata "+strconv.Quote(k), v); err != nil {
			return err
		}
	}
	return nil
}

func checkString(name, v string) error {
	if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
		return fmt.Errorf("poison/postgres: the message's %s is not UTF-8 text without NUL, which PostgreSQL cannot store", name)
	}
	return nil
}
