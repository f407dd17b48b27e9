package postgres_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/postgres"
)

// Racing claims on a record that has just expired: the takeover path of the
// claim statement must also elect exactly one owner and answer every caller.
func TestTakeoverRaceHasOneWinner(t *testing.T) {
	t.Parallel()
	eachLayout(t, func(t *testing.T, newStore func(*testing.T) (*postgres.Store, *pgxpool.Pool)) {
		s, pool := newStore(t)
		for _, state := range []string{"completed", "in_progress"} {
			t.Run(state, func(t *testing.T) {
				seed(t, pool, state, state, 1, -time.Second)
				k := state + "-1"

				const claimers = 50
				var wg sync.WaitGroup
				var acquired, inProgress atomic.Int32
				start := make(chan struct{})
				for range claimers {
					wg.Go(func() {
						<-start
						c, err := s.Claim(testContext(t), k, []byte("fp"), time.Minute)
						switch {
						case err != nil:
							t.Errorf("Claim: %v", err)
						case c.Status == stores.Acquired:
							acquired.Add(1)
						case c.Status == stores.InProgress:
							inProgress.Add(1)
						default:
							t.Errorf("Claim = %v", c.Status)
						}
					})
				}
				close(start)
				wg.Wait()
				if acquired.Load() != 1 || inProgress.Load() != claimers-1 {
					t.Fatalf("acquired=%d in_progress=%d, want 1 and %d", acquired.Load(), inProgress.Load(), claimers-1)
				}
			})
		}
	})
}

// Workers claim and release one key in a loop while others claim it: rows
// are deleted under concurrent claims, yet every claim gets an answer and
// the key never has two owners at once.
func TestClaimReleaseChurnNeverDoubleOwns(t *testing.T) {
	t.Parallel()
	eachLayout(t, func(t *testing.T, newStore func(*testing.T) (*postgres.Store, *pgxpool.Pool)) {
		s, _ := newStore(t)
		const workers, rounds = 8, 40
		var owners, acquisitions atomic.Int32
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				ctx := testContext(t)
				for range rounds {
					c, err := s.Claim(ctx, "k", []byte("fp"), time.Minute)
					if err != nil {
						t.Errorf("Claim: %v", err)
						return
					}
					if c.Status != stores.Acquired {
						continue
					}
					acquisitions.Add(1)
					if n := owners.Add(1); n != 1 {
						t.Errorf("%d owners at once", n)
					}
					owners.Add(-1)
					if err := s.Release(ctx, "k", c.Token); err != nil {
						t.Errorf("Release: %v", err)
						return
					}
				}
			})
		}
		wg.Wait()
		if acquisitions.Load() < 2 {
			t.Fatalf("only %d acquisitions: the churn did not exercise release", acquisitions.Load())
		}
	})
}
