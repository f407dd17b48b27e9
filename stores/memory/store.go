// Package memory is the in-process implementation of [stores.Store]: bounded,
// expiring and stoppable. It is meant for development, tests and
// single-replica services; records live only as long as the process, so two
// replicas do not see each other's claims.
//
// It holds at most Config.MaxEntries records and never drops a live one to
// make room: when it is full, a Claim that would create a record fails with
// [stores.ErrFull] until records expire or are released. Size it for the
// keys the service sees within a TTL (the peak rate of new keys times the
// TTL).
//
// Every method runs under one mutex, so each is atomic and concurrent Claims
// of a key have exactly one winner. Leases and TTLs are judged by this
// process's clock. Fingerprints and results are copied on the way in and out:
// callers cannot change a stored record through a slice.
package memory

import (
	"sync"
	"time"

	"github.com/onceflow/onceflow/stores"
)

// Defaults that New applies to zero Config fields.
const (
	DefaultMaxEntries      = 100_000
	DefaultJanitorInterval = time.Minute
)

// Config configures a Store. Its zero value is ready to use.
type Config struct {
	// MaxEntries bounds the number of records held. A Claim that would
	// create a record in a full store deletes an expired one (a completed
	// record past its TTL, an in-progress one whose lease has ended) if
	// there is one, and otherwise fails with an error matching
	// [stores.ErrFull], changing nothing. A live record is never deleted to
	// make room: forgetting a completed one would let its duplicate run
	// again. Claims of keys the store holds are answered as ever. Zero or
	// negative means DefaultMaxEntries.
	MaxEntries int

	// JanitorInterval is how often a background goroutine deletes expired
	// records, holding the store's mutex while it deletes them.
	// Expired records read as absent whether or not it has run; the janitor
	// only frees their memory. Zero or negative means DefaultJanitorInterval.
	JanitorInterval time.Duration
}

// Store is an in-memory [stores.Store]. It is safe for concurrent use. Close
// it to stop its janitor goroutine.
type Store struct {
	maxEntries int
	stop       chan struct{} // closed by Close to stop the janitor
	done       chan struct{} // closed by the janitor when it exits
	closeOnce  sync.Once

	mu      sync.Mutex
	closed  bool
	entries map[string]*entry // by storage key
	leases  expiry            // the in-progress entries, by the end of their lease
	records expiry            // the completed entries, by the end of their TTL
	tokens  tokens
}

var _ stores.Store = (*Store)(nil)

// New returns a Store configured by cfg and starts its janitor.
func New(cfg Config) *Store {
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = DefaultMaxEntries
	}
	if cfg.JanitorInterval <= 0 {
		cfg.JanitorInterval = DefaultJanitorInterval
	}
	s := &Store{
		maxEntries: cfg.MaxEntries,
		stop:       make(chan struct{}),
		done:       make(chan struct{}),
		entries:    make(map[string]*entry),
		tokens:     newTokens(),
	}
	go s.janitor(cfg.JanitorInterval)
	return s
}

// Len returns the number of records held, including expired records the
// janitor has not deleted yet.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// Close stops the janitor, waits for it to exit and drops every record.
// Afterwards every method returns an error matching [stores.ErrUnavailable]
// and [stores.ErrClosed]. Close is idempotent and always returns nil.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.entries = nil
		s.leases, s.records = nil, nil
		s.mu.Unlock()
		close(s.stop)
	})
	<-s.done
	return nil
}

// janitor deletes expired records every interval until Close.
func (s *Store) janitor(interval time.Duration) {
	defer close(s.done)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
			s.deleteExpired(time.Now())
		}
	}
}

// deleteExpired deletes every expired record, soonest expired first.
func (s *Store) deleteExpired(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for e := s.firstExpired(now); e != nil; e = s.firstExpired(now) {
		s.remove(e)
	}
}
