package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// DropPartitions drops the partitions whose records have all expired and
// returns how many it dropped and how many records they held. A partition
// qualifies once its range and its latest expiry both lie more than grace in
// the past (max(expires_at), read from its index).
//
// It is detached with DETACH PARTITION ... CONCURRENTLY, which locks the
// records table in SHARE UPDATE EXCLUSIVE mode only (claims never wait) and
// waits until no transaction that could still use the partition runs; then
// it is checked again, and dropped only if every record in it has expired.
//
// Why no live record is lost: a record is inserted only into the partition
// of the moment it is written (see claim_partitioned.go), so no row enters
// a partition whose range is over; and no statement can make an expired
// record live again (Complete and Extend need a live lease, a takeover
// moves the key to the current partition). So once every committed record
// of a closed partition has expired, only a transaction still open since
// before the range ended can hold a live record there, uncommitted. grace
// is the bound on that: a transaction using the store that stays open
// longer than grace (set idle_in_transaction_session_timeout, and
// transaction_timeout from PostgreSQL 17, below it) could, in the moment
// between the detach and the check after it, leave its key unseen by a
// concurrent Claim. The check after the detach catches the case: the
// partition is attached again, nothing is dropped, and the error says so.
//
// It waits while another process maintains the table, and goes on with
// the next partition when one fails. A partition whose DETACH ...
// CONCURRENTLY was interrupted (DetachPending) is finalised, checked and
// dropped like the others.
func (s *Store) DropPartitions(ctx context.Context, grace time.Duration) (dropped int, records int64, err error) {
	if grace < 0 {
		return 0, 0, fmt.Errorf("dropping partitions: grace %v must not be negative", grace)
	}
	err = s.withMaintenance(ctx, true, func(conn *pgxpool.Conn, parts []Partition) error {
		now, err := dbNow(ctx, conn)
		if err != nil {
			return err
		}
		dropped, records, err = s.dropPartitions(ctx, conn, parts, now, grace)
		return err
	})
	return dropped, records, err
}

// dropPartitions is DropPartitions on conn, which holds the maintenance
// lock, with parts the partitions listed under it and now the database's
// time.
func (s *Store) dropPartitions(ctx context.Context, conn *pgxpool.Conn, parts []Partition, now time.Time, grace time.Duration) (dropped int, records int64, err error) {
	var errs []error
	for _, p := range parts {
		if p.To.After(now.Add(-grace)) {
			break
		}
		n, done, err := s.dropIfExpired(ctx, conn, p, grace)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if done {
			dropped++
			records += n
		}
	}
	return dropped, records, errors.Join(errs...)
}

// dropIfExpired detaches and drops p if every record in it expired more
// than grace ago, and reports whether it did and how many records p held.
func (s *Store) dropIfExpired(ctx context.Context, conn *pgxpool.Conn, p Partition, grace time.Duration) (int64, bool, error) {
	if !p.DetachPending {
		var expired bool
		err := conn.QueryRow(ctx, fmt.Sprintf(
			`SELECT coalesce(max(expires_at) <= now() - $1::bigint * interval '1 microsecond', true) FROM %s`, p.Name),
			grace.Microseconds()).Scan(&expired)
		if err != nil {
			return 0, false, fmt.Errorf("reading expiries of partition %s: %w", p.Name, err)
		}
		if !expired {
			return 0, false, nil
		}
	}
	detach := "ALTER TABLE %s DETACH PARTITION %s CONCURRENTLY"
	if p.DetachPending {
		detach = "ALTER TABLE %s DETACH PARTITION %s FINALIZE"
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf(detach, s.table, p.Name)); err != nil {
		return 0, false, fmt.Errorf("detaching partition %s: %w", p.Name, err)
	}
	var n int64
	var expired bool
	err := conn.QueryRow(ctx, fmt.Sprintf(`SELECT count(*), coalesce(max(expires_at) <= now(), true) FROM %s`, p.Name)).Scan(&n, &expired)
	if err != nil {
		return 0, false, fmt.Errorf("checking detached partition %s: %w", p.Name, err)
	}
	if !expired {
		if err := attach(ctx, conn, s.table, p.Name, p.From, p.To); err != nil {
			return 0, false, fmt.Errorf("partition %s held a live record once detached, and attaching it again failed: %w", p.Name, err)
		}
		return 0, false, fmt.Errorf("partition %s held a live record once detached (a transaction open longer than the grace?): attached it again", p.Name)
	}
	if _, err := conn.Exec(ctx, "DROP TABLE "+p.Name); err != nil {
		return 0, false, fmt.Errorf("dropping partition %s: %w", p.Name, err)
	}
	return n, true, nil
}
