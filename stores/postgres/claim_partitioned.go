package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/jackc/pgx/v5"
)

// In the partitioned layout the primary key is (key, created_at), so
// PostgreSQL no longer keeps a key to one row, and INSERT ... ON CONFLICT
// (key) has no unique index to conflict on. The store keeps the invariant
// itself: every Claim first takes a transaction advisory lock of its key
// (lockSQL), then runs its claim (claimPartitionedSQL) as the next statement
// of the same transaction, both sent in one round trip (a pgx batch: one
// implicit transaction on a pool, the caller's transaction with Store.With).
//
// Why this keeps one record per key, and every claim linearisable:
//   - Only Claim inserts, and two Claims of one key never overlap: the
//     second waits for the lock until the first's transaction has ended.
//   - Under READ COMMITTED the claim statement takes its snapshot after the
//     lock is granted, so it sees the row the previous Claim committed.
//     (Both statements are one transaction, but each statement has its own
//     snapshot.) Under REPEATABLE READ or SERIALIZABLE the snapshot would be
//     older than the lock, so the claim refuses to insert and Claim fails:
//     exactly-once transactions must use READ COMMITTED, as in the rows
//     layout.
//   - The statement locks the key's row (FOR UPDATE), which waits for a
//     Complete, Release or Extend in flight (they take no advisory lock) and
//     then reads its latest version. A live row is returned unchanged; an
//     expired one is deleted and the new record inserted, in one statement,
//     which is the takeover; a missing one is inserted.
//   - Complete, Release and Extend are the rows layout's single statements:
//     each touches only the row that holds the token and is live, so none
//     can revive an expired record or create a second one.
//
// The new row's created_at is clock_timestamp(), read after the row lock was
// granted: a row is inserted into the partition of the moment it is written,
// never into one whose range ended while the statement waited. That is what
// lets retention treat a partition whose range is over as closed.
//
// A caller's transaction (Store.With) holds the advisory lock of each key it
// claimed until it ends, so a concurrent Claim of that key waits for its
// outcome, as the row lock makes it wait in the rows layout.
const lockSQL = `SELECT current_setting('transaction_isolation'), pg_advisory_xact_lock($1::int, hashtext($2))`

// lockBatchSQL takes the locks of many keys in one statement, in the order
// of their hashes, so that two batches sharing keys cannot deadlock.
const lockBatchSQL = `
SELECT current_setting('transaction_isolation'), count(pg_advisory_xact_lock($1::int, h))
FROM (SELECT DISTINCT hashtext(k) AS h FROM unnest($2::text[]) AS k ORDER BY 1) AS s`

// readCommitted is current_setting('transaction_isolation') under READ
// COMMITTED.
const readCommitted = "read committed"

// claimPartitionedSQL is the claim after lockSQL (see above); parameters as
// pgclaim.SQL's. It returns exactly one row: the record as it stands after the
// statement, with its token (ours when acquired). It returns none only when
// the transaction is not READ COMMITTED.
const claimPartitionedSQL = `
WITH cur AS (
	SELECT key, created_at, state, token, fingerprint, result, completed_at, expires_at
	FROM %[1]s WHERE key = $1
	FOR UPDATE
), gone AS (
	DELETE FROM %[1]s AS r USING cur
	WHERE r.key = cur.key AND r.created_at = cur.created_at AND cur.expires_at <= now()
), ins AS (
	INSERT INTO %[1]s (key, state, token, fingerprint, created_at, expires_at)
	SELECT $1, 'in_progress', $2, $3, clock_timestamp(), now() + $4::bigint * interval '1 microsecond'
	WHERE NOT EXISTS (SELECT FROM cur WHERE cur.expires_at > now())
	AND current_setting('transaction_isolation') = '` + readCommitted + `'
	RETURNING token, state, fingerprint, result, created_at, completed_at, expires_at
)
SELECT token, state, fingerprint, result, created_at, completed_at, expires_at FROM ins
UNION ALL
SELECT token, state, fingerprint, result, created_at, completed_at, expires_at FROM cur WHERE expires_at > now()`

// claimBatchPartitionedSQL is claimPartitionedSQL over arrays (parameters
// as pgclaim.BatchSQL's), after lockBatchSQL. It returns the row of every key
// with the key first, as pgclaim.BatchSQL does.
const claimBatchPartitionedSQL = `
WITH u AS (
	SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[], $4::bigint[]) AS u(key, token, fingerprint, lease)
), cur AS (
	SELECT key, created_at, state, token, fingerprint, result, completed_at, expires_at
	FROM %[1]s WHERE key = ANY ($1::text[])
	ORDER BY key
	FOR UPDATE
), gone AS (
	DELETE FROM %[1]s AS r USING cur
	WHERE r.key = cur.key AND r.created_at = cur.created_at AND cur.expires_at <= now()
), ins AS (
	INSERT INTO %[1]s (key, state, token, fingerprint, created_at, expires_at)
	SELECT u.key, 'in_progress', u.token, u.fingerprint, clock_timestamp(), now() + u.lease * interval '1 microsecond'
	FROM u
	WHERE NOT EXISTS (SELECT FROM cur WHERE cur.key = u.key AND cur.expires_at > now())
	AND current_setting('transaction_isolation') = '` + readCommitted + `'
	RETURNING key, token, state, fingerprint, result, created_at, completed_at, expires_at
)
SELECT key, token, state, fingerprint, result, created_at, completed_at, expires_at FROM ins
UNION ALL
SELECT key, token, state, fingerprint, result, created_at, completed_at, expires_at FROM cur WHERE expires_at > now()`

// batchSender sends several statements in one round trip. *pgxpool.Pool,
// *pgx.Conn and pgx.Tx have it.
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// errNoBatches is the error of the partitioned layout on a database that
// cannot send batches.
var errNoBatches = errors.New("the partitioned layout needs a database that sends batches (SendBatch)")

// errIsolation is a claim's error in the partitioned layout under an
// isolation level other than READ COMMITTED.
var errIsolation = errors.New("the partitioned layout claims under READ COMMITTED only")

func newPartitionedStatements(table string) *statements {
	st := newStatements(table)
	st.claim = fmt.Sprintf(claimPartitionedSQL, table)
	st.claimBatch = fmt.Sprintf(claimBatchPartitionedSQL, table)
	st.lock, st.lockBatch = lockSQL, lockBatchSQL
	return st
}

// lockClass is the first key of the claims' advisory locks on table: the
// keys of different tables never wait on each other.
func lockClass(table string) int32 {
	h := fnv.New32a()
	_, _ = fmt.Fprintf(h, "onceflow/records\x00%s", table)
	return int32(h.Sum32())
}

// sendLocked sends the advisory lock statement (lock with arg) and the
// claim statement (sql with args) in one batch on db, and checks the lock's
// result. The caller reads the claim's result from the returned
// BatchResults and closes them.
func (s *Store) sendLocked(ctx context.Context, db batchSender, lock string, arg any, sql string, args ...any) (pgx.BatchResults, error) {
	b := &pgx.Batch{}
	b.Queue(lock, s.lockClass, arg)
	b.Queue(sql, args...)
	br := db.SendBatch(ctx, b)
	var isolation string
	if err := br.QueryRow().Scan(&isolation, nil); err != nil {
		return nil, errors.Join(err, br.Close())
	}
	if isolation != readCommitted {
		return nil, errors.Join(fmt.Errorf("%w, not %s", errIsolation, isolation), br.Close())
	}
	return br, nil
}
