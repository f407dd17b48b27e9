// Package cache keeps a bounded, process-local copy of COMPLETED idempotency
// records in front of another [stores.Store] (Redis or PostgreSQL), so that a
// duplicate of a recently completed key is answered without a round trip.
//
// Only completed records are cached, never in-progress ones: a claim that
// could acquire or must wait always reaches the wrapped store, so ownership,
// leases and fencing are exactly the wrapped store's. An entry is filled when
// a Claim through this Store returns Completed, and when a Complete through
// this Store succeeds (the record is then built from the acquiring Claim's
// fingerprint and the result). Results larger than Config.MaxResultBytes are
// not cached.
//
// An entry is served until the earlier of its record's ExpiresAt and the
// moment it was cached plus Config.MaxAge. A record filled by Complete
// expires, locally, ttl after the Complete call began, which is no later
// than the wrapped store forgets it when the clocks agree.
//
// Staleness bound: a completed record changes in the wrapped store only when
// it expires or when an operator removes it there (an admin evict or release
// of the key, or a store that lost data). This cache cannot see a removal
// made by another process, so it may keep answering Completed for up to
// Config.MaxAge (30s by default) after it, plus the clock difference between
// this host and the store for records filled by Claim. Within this process,
// Release, Invalidate and any ErrLeaseLost from Complete, Release or Extend
// drop the key's entry at once. Set MaxAge to the longest such window the
// deployment accepts; it does not affect duplicates seen after the window,
// which simply cost one round trip again.
//
// A Store is safe for concurrent use by multiple goroutines.
package cache

import (
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/onceflow/onceflow/stores"
)

// Defaults of Config.
const (
	DefaultSize           = 10_000
	DefaultMaxAge         = 30 * time.Second
	DefaultMaxResultBytes = 8 << 10
)

// Config tunes a Store. The zero value uses the defaults.
type Config struct {
	// Size bounds the number of cached records (DefaultSize when not
	// positive). The least recently used record is dropped first.
	Size int
	// MaxAge bounds how long a record is served from the cache after it was
	// cached (DefaultMaxAge when not positive): the staleness bound after
	// another process removes the key from the wrapped store.
	MaxAge time.Duration
	// MaxResultBytes is the largest result cached (DefaultMaxResultBytes
	// when not positive); larger ones are always read from the wrapped store.
	MaxResultBytes int
	// Now is the local clock (time.Now when nil); tests set it.
	Now func() time.Time
	// Observer, when set, is called on every lookup (Hit or Miss) and every
	// entry dropped by an invalidation. It must be fast and safe for
	// concurrent use; it runs on the caller's goroutine.
	Observer func(Event)
}

// Event is what Config.Observer is told.
type Event int

// Events.
const (
	// Hit: a Claim was answered from the cache.
	Hit Event = iota + 1
	// Miss: a Claim went to the wrapped store.
	Miss
	// Invalidation: an entry was dropped by Release, Invalidate or a lost
	// lease.
	Invalidation
)

// String returns the lower-case name used in metrics.
func (e Event) String() string {
	switch e {
	case Hit:
		return "hit"
	case Miss:
		return "miss"
	case Invalidation:
		return "invalidation"
	default:
		return "unknown"
	}
}

// Stats counts a Store's events since it was made.
type Stats struct {
	Hits, Misses, Invalidations uint64
}

// Store is a [stores.Store] that answers Claims of recently completed keys
// from a local cache and passes everything else to the store it wraps.
type Store struct {
	next     stores.Store
	cfg      Config
	records  *lru.Cache[string, *entry]   // storage key -> completed record
	acquired *lru.Cache[string, acquired] // storage key -> this process's claim
	hits     atomic.Uint64
	misses   atomic.Uint64
	dropped  atomic.Uint64
}

var _ stores.Store = (*Store)(nil)

// New returns a Store that caches next's completed records as cfg says.
func New(next stores.Store, cfg Config) *Store {
	if cfg.Size <= 0 {
		cfg.Size = DefaultSize
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	if cfg.MaxResultBytes <= 0 {
		cfg.MaxResultBytes = DefaultMaxResultBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	// lru.New fails only for a size that is not positive.
	records, _ := lru.New[string, *entry](cfg.Size)
	claims, _ := lru.New[string, acquired](cfg.Size)
	return &Store{next: next, cfg: cfg, records: records, acquired: claims}
}

// Stats returns the counts of hits, misses and invalidations so far.
func (s *Store) Stats() Stats {
	return Stats{Hits: s.hits.Load(), Misses: s.misses.Load(), Invalidations: s.dropped.Load()}
}

// Len returns the number of cached records, expired ones included until
// they are looked up or pushed out.
func (s *Store) Len() int { return s.records.Len() }

// Invalidate drops key's cached record, if any. An admin path that removes
// a key from the wrapped store calls it so this process stops serving the
// record at once; other processes stop within Config.MaxAge.
func (s *Store) Invalidate(key string) {
	if k, err := stores.StorageKey(key); err == nil {
		s.invalidate(k)
	}
}

func (s *Store) observe(e Event) {
	switch e {
	case Hit:
		s.hits.Add(1)
	case Miss:
		s.misses.Add(1)
	case Invalidation:
		s.dropped.Add(1)
	}
	if s.cfg.Observer != nil {
		s.cfg.Observer(e)
	}
}
