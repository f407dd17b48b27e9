// Package memory is the in-process implementation of [stores.Store]: bounded,
// expiring and stoppable. It is meant for development, tests and
// single-replica services; records live only as long as the process, so two
// replicas do not see each other's claims.
//
// Every method runs under one mutex, so each is atomic and concurrent Claims
// of a key have exactly one winner. Leases and TTLs are judged by this
// process's clock. Fingerprints and results are copied on the way in and out:
// callers cannot change a stored record through a slice.
package memory

import (
	"errors"
	"sync"
	"time"

	"github.com/onceflow/onceflow/stores"
)

// Defaults that New applies to zero Config fields.
const (
	DefaultMaxEntries      = 100_000
	DefaultJanitorInterval = time.Minute
)

// ErrFull means a Claim found the store at Config.MaxEntries with nothing to
// evict: every record is in progress with a live lease. Claim returns it
// wrapped in a [stores.UnavailableError], so the receiver's store-error policy
// applies.
var ErrFull = errors.New("memory store full of in-progress records")

// Config configures a Store. Its zero value is ready to use.
type Config struct {
	// MaxEntries bounds the number of records held. When a Claim of a new key
	// finds the store full, it evicts the least recently used completed
	// record (completing and claiming a completed key count as use); if there
	// is none, an in-progress record whose lease has ended; failing both, it
	// returns ErrFull. A live lease is never evicted. Zero or negative means
	// DefaultMaxEntries.
	MaxEntries int

	// JanitorInterval is how often a background goroutine deletes expired
	// records, holding the store's mutex for one pass over all records.
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
	lru     lru               // completed entries only, most recently used first
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
		s.lru = lru{}
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

// deleteExpired deletes every expired record.
func (s *Store) deleteExpired(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.entries {
		if e.expired(now) {
			s.remove(e)
		}
	}
}
