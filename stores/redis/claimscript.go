package redisstore

import "github.com/onceflow/onceflow/stores/redis/internal/redisscript"

// ClaimBatchScript returns the Lua source of the script with which a Store
// on a single server claims a batch of keys in one round trip. It is for
// tools that drive Redis themselves and measure the store's own claim, as
// the bench's redis-benchmark runs do; a Store's user never needs it.
//
// KEYS are the storage keys (Config.KeyPrefix followed by the key, see the
// package documentation), ARGV three arguments per key, in the keys' order:
// the new token, the fingerprint and the lease in microseconds. The reply
// holds one claim reply per key, or that key's error. Run on a Store's
// keys, it claims for that Store, as the Store's own batched Claims do.
func ClaimBatchScript() string { return redisscript.ClaimBatch }
