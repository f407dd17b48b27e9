package app

import (
	"context"
	"strings"
	"time"

	"github.com/onceflow/onceflow/middleware/idempotencykey"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/memory"
)

// httpRecords is how the record key of every record of the HTTP face
// begins.
var httpRecords = receiver.RecordKey(idempotencykey.Scope, "")

// memoryStores is STORE=memory: the HTTP face's records and the message
// handlers' in memory stores of their own (MEMORY_MAX_HTTP_RECORDS,
// MEMORY_MAX_RECORDS), told apart by the record key's scope. A full store
// refuses new keys rather than forget a record, so sharing one would let a
// flood of requests with fresh keys stop every handler until its records
// expire; apart, it stops only new requests. Within the HTTP face's, each
// client holds at most MEMORY_HTTP_CLIENT_SHARE percent, so that one
// client cannot stop the others' new requests either.
type memoryStores struct {
	http, messages *memory.Store
}

var (
	_ stores.Store = memoryStores{}
	_ stores.Admin = memoryStores{}
)

func newMemoryStores(cfg Config) memoryStores {
	return memoryStores{
		http: memory.New(memory.Config{
			MaxEntries: cfg.MemoryMaxHTTPRecords, MaxBytes: cfg.MemoryMaxHTTPBytes,
			Owner: httpClient, OwnerShare: float64(cfg.MemoryHTTPClientShare) / 100,
		}),
		messages: memory.New(memory.Config{MaxEntries: cfg.MemoryMaxRecords, MaxBytes: cfg.MemoryMaxBytes}),
	}
}

// httpClient is the owner of an HTTP record: its client. The anonymous
// client of ALLOW_ANONYMOUS is every caller, so it has no share.
func httpClient(key string) string {
	client, _ := idempotencykey.ClientOf(key)
	return client
}

// of returns the store that keeps key's record.
func (m memoryStores) of(key string) *memory.Store {
	if strings.HasPrefix(key, httpRecords) {
		return m.http
	}
	return m.messages
}

func (m memoryStores) Claim(ctx context.Context, key string, fingerprint []byte, lease time.Duration) (stores.Claim, error) {
	return m.of(key).Claim(ctx, key, fingerprint, lease)
}

func (m memoryStores) Complete(ctx context.Context, key string, token stores.Token, result []byte, ttl time.Duration) error {
	return m.of(key).Complete(ctx, key, token, result, ttl)
}

func (m memoryStores) Release(ctx context.Context, key string, token stores.Token) error {
	return m.of(key).Release(ctx, key, token)
}

func (m memoryStores) Extend(ctx context.Context, key string, token stores.Token, lease time.Duration) (time.Time, error) {
	return m.of(key).Extend(ctx, key, token, lease)
}

func (m memoryStores) Lookup(ctx context.Context, key string) (stores.Entry, error) {
	return m.of(key).Lookup(ctx, key)
}

func (m memoryStores) Remove(ctx context.Context, key string, read stores.Entry) error {
	return m.of(key).Remove(ctx, key, read)
}

// Close closes both stores.
func (m memoryStores) Close() error {
	_ = m.http.Close()
	return m.messages.Close()
}
