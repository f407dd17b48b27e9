// Package memory is the in-process implementation of [stores.Store]: bounded,
// expiring and stoppable. It is meant for development, tests and
// single-replica services; records live only as long as the process, so two
// replicas do not see each other's claims.
//
// It holds at most Config.MaxEntries records and about Config.MaxBytes
// bytes, and never drops a live record to make room: when it is full, a
// Claim that would create a record fails with a [*stores.FullError]
// (matching [stores.ErrFull]) that says when the soonest record expires.
// Size it for the keys the service sees within a TTL (the peak rate of new
// keys times the TTL). Where keys have owners (an HTTP API's clients),
// Config.Owner and Config.OwnerShare keep one owner from filling the store
// for the others.
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
	DefaultMaxBytes        = 256 << 20
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

	// MaxBytes bounds the bytes the records take: their keys, fingerprints
	// and results and an overhead of 256 bytes each. A Claim in a store
	// holding MaxBytes or more is refused as in a store holding MaxEntries.
	// Complete is never refused for its result's size, so the store may
	// exceed MaxBytes by the results of the claims in flight: bound those
	// where they are made (the HTTP face stores at most its
	// WithMaxStoredResponse). Zero or negative means DefaultMaxBytes.
	MaxBytes int64

	// Owner, with OwnerShare, caps what one owner of keys may hold: it
	// names the owner of a key (the client of an HTTP record; "" for a key
	// with none), and a Claim that would create a record beyond its
	// owner's OwnerShare of MaxEntries or MaxBytes fails with a
	// [*stores.FullError] whose Owner is set, and RoomIn when the owner's
	// soonest record expires, while other owners' Claims create records.
	// OwnerShare is a fraction in (0, 1); outside it, or with a nil Owner,
	// no share is kept.
	Owner      func(key string) string
	OwnerShare float64

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
	maxBytes   int64
	ownerOf    func(key string) string // nil: no shares
	share      struct {
		records int
		bytes   int64
	}
	stop      chan struct{} // closed by Close to stop the janitor
	done      chan struct{} // closed by the janitor when it exits
	closeOnce sync.Once

	mu      sync.Mutex
	closed  bool
	entries map[string]*entry // by storage key
	leases  expiry            // the in-progress entries, by the end of their lease
	records expiry            // the completed entries, by the end of their TTL
	bytes   int64             // the entries' sizes
	owners  map[string]*owner // the owners of entries, by name
	tokens  tokens
}

var _ stores.Store = (*Store)(nil)

// New returns a Store configured by cfg and starts its janitor.
func New(cfg Config) *Store {
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = DefaultMaxEntries
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.JanitorInterval <= 0 {
		cfg.JanitorInterval = DefaultJanitorInterval
	}
	s := &Store{
		maxEntries: cfg.MaxEntries,
		maxBytes:   cfg.MaxBytes,
		stop:       make(chan struct{}),
		done:       make(chan struct{}),
		entries:    make(map[string]*entry),
		leases:     expiry{slot: byState},
		records:    expiry{slot: byState},
		owners:     make(map[string]*owner),
		tokens:     newTokens(),
	}
	if cfg.Owner != nil && cfg.OwnerShare > 0 && cfg.OwnerShare < 1 {
		s.ownerOf = cfg.Owner
		s.share.records = max(1, int(float64(cfg.MaxEntries)*cfg.OwnerShare))
		s.share.bytes = max(1, int64(float64(cfg.MaxBytes)*cfg.OwnerShare))
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
		s.entries, s.owners = nil, nil
		s.leases.entries, s.records.entries = nil, nil
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
