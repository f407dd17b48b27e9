// Package redisstore implements [stores.Store] on Redis 7 or later, a
// single node or a Redis Cluster, through go-redis's UniversalClient
// ([CheckVersion] tells a server too old before its Claims are refused).
//
// Each record is one Redis string, packed (see package
// internal/redisscript for the layout), at Config.KeyPrefix followed by
// the storage key (see [stores.StorageKey]), or by its [stores.HashedKey]
// when it holds a "{": a Redis Cluster places a key by the hash tag between
// its first "{" and the next "}", and a key is often made of what a client
// or producer sends, which must not choose the shard its records land on
// (all of them on one). Every Store method is one command on that key: a
// Claim the native SET … NX PX … GET, which creates the record or answers
// the one the key holds; the others a Lua script that touches only that
// key (KEYS[1]). So:
//
//   - each method is atomic and takes one round trip: Redis runs a command
//     or a script to the end before any other command, so there is no
//     check-then-set window between callers, even across processes (a
//     Claim whose answer needs the server's clock, such as on a key
//     released a moment ago, takes a second one, to the claim script);
//   - it works on Redis Cluster: the command is routed to the node that owns
//     the key's slot, and never needs keys from another slot;
//   - leases and TTLs are judged by the Redis server's clock: the key
//     expires when the lease or TTL ends, by the server's clock, and the
//     scripts read it with TIME where they decide, never the caller's. A
//     key whose lease ended is simply absent and the next Claim takes it
//     over with a new token. An acquired lease's end is reported from the
//     client's clock as it sends the Claim, never after the server's end
//     (see Store.Claim).
//
// Unless Config.BatchSize turns it off, concurrent Claims, and concurrent
// Completes, share a round trip (see Config.BatchSize): Claims as one
// pipeline of their commands; Completes, on a single server, as one script
// that runs the batch's calls one after the other, each on its own key
// with its own reply or error, and on a Cluster as one pipeline of one-key
// scripts per node. Either way each call is atomic on its key, so the
// points above hold call by call.
//
// Calls are safe to retry. go-redis resends a command whose connection
// broke before the reply came (Options.MaxRetries, 3 by default), though
// the server may have run it. Each call recognises a run of it that took
// effect (a Claim by the token it draws before the call and finds in the
// record, a Complete by its token and result, and Release and Extend by a
// call id they send) and answers as it did, changing nothing more; so a
// client that retries reports the same outcomes as one that does not, as
// long as the resent call arrives while the lease the first run took,
// extended or released lasts (for Complete, while the completed record
// lives). See package internal/redisscript.
//
// Records of the earlier layout, one hash per record, are read as they
// were until they expire: every script reads both, and writes only the
// packed one.
//
// Scripts run with EVALSHA and fall back to EVAL when the server does not
// know them (after a restart, a failover or SCRIPT FLUSH). Because they read
// TIME they rely on scripts being replicated by their effects: the default
// since Redis 5 and the only mode since Redis 7.
//
// Errors: a context that is done yields an error matching the context's
// error; any other failure of the client or server, and a key that holds
// something other than a record, yields a [stores.UnavailableError].
//
// Durability: a Redis that forgets records (no persistence, eviction, an
// asynchronous replica promoted after a failover) lets later duplicates
// through. Inspect reads the server's settings so that the caller can warn
// or refuse to start, and Config.WaitReplicas makes Complete wait until
// replicas have the record.
package redisstore

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/internal/batch"
)

// DefaultKeyPrefix is the key prefix used when Config.KeyPrefix is empty.
const DefaultKeyPrefix = "onceflow:idem:"

// DefaultWaitTimeout is Config.WaitTimeout when it is zero.
const DefaultWaitTimeout = time.Second

// Config configures a Store. The zero value is ready to use.
type Config struct {
	// KeyPrefix is prepended to every storage key, to keep the records apart
	// from other data in the same Redis. Default DefaultKeyPrefix. It should
	// not contain a hash tag ("{...}"): that would put every record in one
	// Cluster slot.
	KeyPrefix string

	// WaitReplicas, when positive, makes Complete return only after that
	// many replicas acknowledge the completed record: the script and a
	// WAIT run in one pipeline on one connection to the key's master, one
	// round trip. Zero (the default) does not wait. See Store.Complete.
	WaitReplicas int
	// WaitTimeout bounds the WAIT. Default DefaultWaitTimeout. The client's
	// read timeout must exceed it, or the client gives up first.
	WaitTimeout time.Duration

	// BatchSize coalesces concurrent Claims, and concurrent Completes,
	// into batches of at most that many calls, each one round trip:
	// Claims as one pipeline of their commands; Completes on a single
	// server as one script that runs every call of the batch in turn, on
	// a Cluster (or a Ring) as a pipeline of one script per call. On a
	// Cluster a pipeline goes out as one per node, sent concurrently. Default DefaultBatchSize, the service's;
	// 1 (or Unbatched) sends each call alone, a round trip each, which
	// under concurrent load costs about a third of the calls per second. Every call keeps its own reply and error, so the
	// contract holds call by call. A call runs at once, alone, while fewer
	// than BatchWorkers batches are in flight, so an idle store adds no
	// wait; otherwise it joins the next batch, and waits at most
	// BatchTimeout before that batch is sent. Complete with WaitReplicas
	// set is never batched.
	BatchSize int
	// Unbatched sends each call alone, whatever BatchSize says.
	Unbatched bool
	// BatchWorkers is how many batches may be in flight at once. Default
	// DefaultBatchWorkers.
	BatchWorkers int
	// BatchTimeout bounds how long a call waits to be sent. Default
	// DefaultBatchTimeout.
	BatchTimeout time.Duration
	// BatchLinger is how long a worker under load waits for its next
	// batch to fill back to its last one's size. Default
	// DefaultBatchLinger: a fuller batch saves a round trip's work on the
	// client and on the server.
	BatchLinger time.Duration
	// BatchObserver, when set with batching on, is told the number of
	// calls of every batch as it is sent, op "claim" or "complete" (a call
	// sent alone is a batch of one): how full batches run, which
	// BatchWorkers and BatchLinger trade against a call's wait.
	BatchObserver func(op string, calls int)
}

// Store keeps idempotency records in Redis. It is safe for concurrent use by
// many goroutines and by many processes sharing the same Redis. It does not
// own the client: closing the client is the caller's job, after which every
// method fails with an error matching [stores.ErrUnavailable].
type Store struct {
	client       redis.UniversalClient
	prefix       string
	waitReplicas int
	waitTimeout  time.Duration
	batch        *batchers // nil when batching is off
}

var _ stores.Store = (*Store)(nil)

// New returns a Store on client, which may be a *redis.Client, a
// *redis.ClusterClient or any other UniversalClient. It fails only when
// client is nil or a numeric setting of cfg is negative.
func New(client redis.UniversalClient, cfg Config) (*Store, error) {
	if client == nil {
		return nil, errors.New("redisstore: missing client")
	}
	for _, f := range []struct {
		name  string
		value int64
	}{
		{"BatchSize", int64(cfg.BatchSize)}, {"BatchWorkers", int64(cfg.BatchWorkers)},
		{"BatchTimeout", int64(cfg.BatchTimeout)}, {"BatchLinger", int64(cfg.BatchLinger)},
		{"WaitReplicas", int64(cfg.WaitReplicas)}, {"WaitTimeout", int64(cfg.WaitTimeout)},
	} {
		if f.value < 0 {
			return nil, fmt.Errorf("redisstore: Config.%s is negative: zero is the default", f.name)
		}
	}
	if cfg.BatchSize == 0 && !cfg.Unbatched {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = DefaultKeyPrefix
	}
	if cfg.WaitTimeout == 0 {
		cfg.WaitTimeout = DefaultWaitTimeout
	}
	s := &Store{client: client, prefix: cfg.KeyPrefix, waitReplicas: cfg.WaitReplicas, waitTimeout: cfg.WaitTimeout}
	if cfg.BatchSize > 1 && !cfg.Unbatched {
		s.batch = newBatchers(s, batch.Config{
			MaxSize: cfg.BatchSize, Workers: cfg.BatchWorkers, Timeout: cfg.BatchTimeout, Linger: cfg.BatchLinger,
		}.Or(batch.Config{Workers: DefaultBatchWorkers, Timeout: DefaultBatchTimeout, Linger: DefaultBatchLinger}), cfg.BatchObserver)
	}
	return s, nil
}

// redisKey is the Redis key of the record of storage key k: the prefix,
// then k, or k's hash when k holds a "{", which on a Cluster would be a
// hash tag chosen by whoever chose the key.
func (s *Store) redisKey(k string) string {
	if strings.IndexByte(k, '{') >= 0 {
		return s.prefix + stores.HashedKey(k)
	}
	return s.prefix + k
}
