package linearizable

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/onceflow/onceflow/stores"
)

// The checker checks: a small in-test store passes when honest, and each
// of its deliberate bugs is reported as a violation.

// bug is a deliberate defect of toyStore.
type bug int

const (
	honest           bug = iota
	ignoresLease         // Claim acquires whatever the record
	completeAnyToken     // Complete skips the token check
	earlyTakeover        // a lease ends at half its length
	extendRevives        // Extend accepts its owner's ended lease
	forgetsCompleted     // a completed record ends at half its TTL
)

func (b bug) String() string {
	return [...]string{"honest", "Claim ignores the lease", "Complete without the token check",
		"takeover at half the lease", "Extend revives an ended lease", "completed record forgotten at half its TTL"}[b]
}

// toyStore is a store on a map under a mutex, with one bug or none.
type toyStore struct {
	bug     bug
	mu      sync.Mutex
	records map[string]*toyRecord
	issued  int
}

type toyRecord struct {
	done    bool
	token   stores.Token
	fp, res []byte
	end     time.Time // lease end or expiry
}

func newToyStore(b bug) *toyStore { return &toyStore{bug: b, records: map[string]*toyRecord{}} }

// live returns key's record if it has not ended.
func (s *toyStore) live(key string, now time.Time) *toyRecord {
	r := s.records[key]
	if r == nil || !now.Before(r.end) {
		return nil
	}
	return r
}

func (s *toyStore) Claim(_ context.Context, key string, fp []byte, lease time.Duration) (stores.Claim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if r := s.live(key, now); r != nil && s.bug != ignoresLease {
		if r.done {
			return stores.Claim{Status: stores.Completed, Record: stores.Record{Fingerprint: r.fp, Result: r.res, ExpiresAt: r.end}}, nil
		}
		return stores.Claim{Status: stores.InProgress, LeaseUntil: r.end, Record: stores.Record{Fingerprint: r.fp}}, nil
	}
	s.issued++
	r := &toyRecord{token: stores.Token(fmt.Sprint(s.issued)), fp: fp, end: now.Add(lease)}
	s.records[key] = r
	if s.bug == earlyTakeover {
		r.end = now.Add(lease / 2) // but it reports the full lease
	}
	return stores.Claim{Status: stores.Acquired, Token: r.token, LeaseUntil: now.Add(lease)}, nil
}

// owned returns the record token owns on key.
func (s *toyStore) owned(key string, token stores.Token, now time.Time) (*toyRecord, error) {
	r := s.live(key, now)
	if s.bug == extendRevives {
		r = s.records[key]
	}
	if r == nil || r.done || r.token != token {
		return nil, stores.ErrLeaseLost
	}
	return r, nil
}

func (s *toyStore) Complete(_ context.Context, key string, token stores.Token, result []byte, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	r, err := s.owned(key, token, now)
	if s.bug == completeAnyToken && err != nil {
		if r = s.live(key, now); r != nil && !r.done {
			err = nil
		}
	}
	if err != nil {
		return err
	}
	r.done, r.res, r.end = true, result, now.Add(ttl)
	if s.bug == forgetsCompleted {
		r.end = now.Add(ttl / 2)
	}
	return nil
}

func (s *toyStore) Release(_ context.Context, key string, token stores.Token) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.owned(key, token, time.Now()); err != nil {
		return err
	}
	delete(s.records, key)
	return nil
}

func (s *toyStore) Extend(_ context.Context, key string, token stores.Token, lease time.Duration) (time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	r, err := s.owned(key, token, now)
	if err != nil {
		return time.Time{}, err
	}
	r.end = now.Add(lease)
	return r.end, nil
}

// Lookup and Remove make toyStore a stores.Admin, so that runs read it too.
func (s *toyStore) Lookup(_ context.Context, key string) (stores.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.live(key, time.Now())
	switch {
	case r == nil:
		return stores.Entry{}, stores.ErrNotFound
	case r.done:
		return stores.Entry{Status: stores.Completed, Token: r.token, Record: stores.Record{Fingerprint: r.fp, Result: r.res, ExpiresAt: r.end}}, nil
	}
	return stores.Entry{Status: stores.InProgress, Token: r.token, LeaseUntil: r.end, Record: stores.Record{Fingerprint: r.fp}}, nil
}

func (s *toyStore) Remove(context.Context, string, stores.Entry) error {
	return fmt.Errorf("toyStore: Remove is not implemented")
}

var (
	_ stores.Store = (*toyStore)(nil)
	_ stores.Admin = (*toyStore)(nil)
)

func TestHonestToyStoreIsLinearizable(t *testing.T) {
	Run(t, newToyStore(honest), Config{Duration: 500 * time.Millisecond})
}

// TestBrokenStoresAreCaught fails if the checker accepts the history of a
// store with a bug. A bug shows only when the run provokes it, so each is
// given a few runs.
func TestBrokenStoresAreCaught(t *testing.T) {
	for _, b := range []bug{ignoresLease, completeAnyToken, earlyTakeover, extendRevives, forgetsCompleted} {
		t.Run(b.String(), func(t *testing.T) {
			t.Parallel()
			cfg := Config{Duration: 500 * time.Millisecond, Keys: 6, Seed: uint64(b)}.withDefaults()
			for attempt := 1; attempt <= 3; attempt++ {
				h := record(newToyStore(b), cfg)
				v := check(h, cfg)
				if v.result == porcupine.Illegal {
					t.Logf("caught in run %d of %d calls", attempt, len(h.ops))
					return
				}
				cfg.Seed += 100
			}
			t.Fatalf("the checker accepted 3 histories of a store whose %s", b)
		})
	}
}

func TestVisualisationIsWritten(t *testing.T) {
	cfg := Config{Duration: 200 * time.Millisecond, Seed: 1, OutDir: t.TempDir()}.withDefaults()
	h := record(newToyStore(ignoresLease), cfg)
	h.faults = []faultSpan{{name: "pause", start: 0, end: int64(time.Millisecond)}}
	v := check(h, cfg)
	if v.result != porcupine.Illegal {
		t.Fatalf("check = %v, want Illegal", v.result)
	}
	path, err := visualise(h, v, cfg.OutDir, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(page), "<html") || !strings.Contains(string(page), "pause") {
		t.Fatalf("visualisation %s: %d bytes, %v; want a page marking the fault", path, len(page), err)
	}
	if why := explain(h, v); !strings.Contains(why, "unplaced") {
		t.Fatalf("explanation names no call it could not place:\n%s", why)
	}
}
