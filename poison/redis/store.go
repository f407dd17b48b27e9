// Package redispoison implements [poison.Store] on Redis, a single node or
// a Redis Cluster, through go-redis's UniversalClient.
//
// # Keys
//
// Every key of a store begins with the hash tag "{" + Config.KeyPrefix +
// "}", so that they all hash to one Redis Cluster slot and a Lua script may
// touch several of them (or, like Park, compute a message's key from an id
// it read) on a Cluster as on a single node. The price is that one store
// lives on one shard; it is bounded by its Limits, so it fits. With the
// default prefix the keys are:
//
//	{onceflow:poison:}seq         string: the last id drawn (INCR)
//	{onceflow:poison:}ids         sorted set: every id, scored by itself
//	{onceflow:poison:}parked_at   sorted set: every id, scored by its parked_at (Unix µs)
//	{onceflow:poison:}bytes       string: the sum of the messages' Message.Size
//	{onceflow:poison:}m:<id>      hash: the message, a field per Message field, and its size
//
// The text between "{" and "}" picks the slot; a prefix that holds braces
// of its own still gives every key of the store the same tag.
//
// # Guarantees
//
//   - Park is one Lua script: it removes up to [SweepBatch] messages past
//     their retention, checks Limits.MaxMessages and Limits.MaxBytes against
//     what is left, and stores the message, as one atomic step. Redis runs a
//     script to the end before any other command, so the bounds hold
//     exactly however many callers, in however many processes, park at once.
//   - Settle is one Lua script: a message changes state once, from Parked;
//     every later Settle gets ErrSettled and the message as the first left
//     it.
//   - IDs are positive decimal integers drawn from one counter, in the
//     order messages were parked; a second Park of the same message is a
//     second entry.
//   - Retention is measured against Config.Now, the caller's clock, passed
//     into the scripts; never the server's TIME. A message parked before
//     now - Limits.Retention is invisible at once to Get, List, Settle and
//     Summary, and its keys are deleted by the next Parks, SweepBatch at a
//     time. Processes sharing a store should keep their clocks in step.
//   - Times round-trip at microsecond precision; ParkedAt and SettledAt come
//     back in UTC. Strings, metadata and payloads round-trip byte for byte,
//     valid UTF-8 or not (an idempotency key that changed would defeat the
//     receiver's deduplication of a redriven message).
//   - Get is one round trip. List reads ids newest first, in chunks, and
//     applies the filter to a few small fields of each before it fetches
//     the page's messages: a page costs O(page) when most messages match
//     (the unfiltered first page reads page+1 ids), and up to O(all) when
//     few do. Summary reads every id. Neither is a snapshot: a message
//     parked or settled while they run may or may not be seen.
//
// Errors: a done context yields an error matching the context's error; a
// failure of the client or the server is returned wrapped, with the
// operation named.
//
// Durability: the poison topic's reader acknowledges a message once it is
// parked, so a Redis that forgets data (no persistence, an asynchronous
// replica promoted after a failover) loses parked messages for good, and
// one that evicts keys (a maxmemory-policy other than noeviction or
// volatile-*) may drop a message or the id counter. Park guards the
// counter: it never reuses an id still in the store.
package redispoison

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/poison"
)

// DefaultKeyPrefix is the key prefix used when Config.KeyPrefix is empty.
const DefaultKeyPrefix = "onceflow:poison:"

// SweepBatch is the most messages past their retention one Park removes.
// It bounds the time the Park script holds the server. A Park that finds
// more than that many expired messages counts the rest against the bounds,
// and may report ErrFull, until the following Parks have removed them:
// the caller retries a full store anyway.
const SweepBatch = 500

// scanChunk is the most ids one List or Summary round trip reads.
const scanChunk = 1024

// Config configures a Store. The zero value is ready to use.
type Config struct {
	// KeyPrefix names the store's keys: every key begins with
	// "{" + KeyPrefix + "}" (see the package documentation). Default
	// DefaultKeyPrefix. Two stores with the same prefix on one Redis are
	// the same store.
	KeyPrefix string
	// Limits bound the store. The zero value means poison.DefaultLimits;
	// any other must pass Limits.Validate.
	Limits poison.Limits
	// Now is the clock retention is measured against, and the time a
	// message without ParkedAt is parked at. Default time.Now.
	Now func() time.Time
}

// Store keeps parked poisoned messages in Redis. It is safe for concurrent
// use by many goroutines and by many processes sharing the same Redis. It
// does not own the client: closing the client is the caller's job.
type Store struct {
	client redis.UniversalClient
	limits poison.Limits
	now    func() time.Time
	keys   keys
}

var _ poison.Store = (*Store)(nil)

// keys are the Redis keys of one store.
type keys struct {
	seq, ids, parkedAt, bytes string
	// msg is the prefix of a message's key: msg + id.
	msg string
}

func newKeys(prefix string) keys {
	tag := "{" + prefix + "}"
	return keys{seq: tag + "seq", ids: tag + "ids", parkedAt: tag + "parked_at", bytes: tag + "bytes", msg: tag + "m:"}
}

func (k keys) message(id int64) string { return k.msg + strconv.FormatInt(id, 10) }

// New returns a Store on client, which may be a *redis.Client, a
// *redis.ClusterClient or any other UniversalClient. It fails only when
// client is nil or cfg.Limits is set but not valid. It sends no command.
func New(client redis.UniversalClient, cfg Config) (*Store, error) {
	if client == nil {
		return nil, errors.New("redispoison: missing client")
	}
	if cfg.Limits == (poison.Limits{}) {
		cfg.Limits = poison.DefaultLimits
	}
	if err := cfg.Limits.Validate(); err != nil {
		return nil, fmt.Errorf("redispoison: %w", err)
	}
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = DefaultKeyPrefix
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Store{client: client, limits: cfg.Limits, now: cfg.Now, keys: newKeys(cfg.KeyPrefix)}, nil
}

// cutoff is the parked_at, in Unix microseconds, below which a message is
// past its retention now.
func (s *Store) cutoff() int64 { return s.now().Add(-s.limits.Retention).UnixMicro() }

// maxID is the largest id: ids are sorted set scores, float64, exact up to
// 2^53.
const maxID = 1 << 53

// parseID returns the number id names, false when id is not the decimal
// form of an id this store could have drawn ("007" is not "7").
func parseID(id string) (int64, bool) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 || n > maxID || strconv.FormatInt(n, 10) != id {
		return 0, false
	}
	return n, true
}
