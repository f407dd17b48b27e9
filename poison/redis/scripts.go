package redispoison

import "github.com/redis/go-redis/v9"

// The fields of a message's hash. Strings are stored as they are (Redis
// strings are binary-safe); times as decimal Unix microseconds.
const (
	fieldUUID      = "uuid"
	fieldTopic     = "topic"
	fieldHandler   = "handler"
	fieldReason    = "reason"
	fieldClass     = "class"
	fieldKey       = "key"
	fieldMetadata  = "metadata" // see encodeMetadata
	fieldPayload   = "payload"
	fieldParkedAt  = "parked_at"
	fieldSize      = "size" // Message.Size, as counted in the bytes total
	fieldState     = "state"
	fieldSettledBy = "settled_by"
	fieldSettledAt = "settled_at"
)

// messageFields are the fields a whole message is read from, in the order
// decodeMessage reads them.
var messageFields = []string{fieldUUID, fieldTopic, fieldHandler, fieldReason, fieldClass, fieldKey,
	fieldMetadata, fieldPayload, fieldParkedAt, fieldState, fieldSettledBy, fieldSettledAt}

// listFields are messageFields as List reads them: in the payload's place
// a field no message has, which HMGET answers with nil.
var listFields = []string{fieldUUID, fieldTopic, fieldHandler, fieldReason, fieldClass, fieldKey,
	fieldMetadata, "-", fieldParkedAt, fieldState, fieldSettledBy, fieldSettledAt}

// metaFields are the fields a Filter looks at, in the order decodeMeta
// reads them: what List and Summary scan.
var metaFields = []string{fieldHandler, fieldTopic, fieldClass, fieldState, fieldParkedAt}

// parkScript removes up to a batch of expired messages, checks the bounds
// and stores the message, atomically.
//
// KEYS: seq, ids, parked_at, bytes.
// ARGV: [1] the message key prefix, [2] the cutoff (a parked_at below it is
// expired), [3] the sweep batch, [4] MaxMessages, [5] MaxBytes, [6] the
// message's size, [7] its parked_at, [8...] the message's field/value pairs.
//
// Reply: {1, id} when parked; {0, count, bytes} when full, with what the
// store holds.
var parkScript = redis.NewScript(`
local prefix = ARGV[1]
local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', '(' .. ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
local freed = 0
for _, id in ipairs(expired) do
  local size = redis.call('HGET', prefix .. id, 'size')
  if size then freed = freed + tonumber(size) end
  redis.call('DEL', prefix .. id)
end
if #expired > 0 then
  redis.call('ZREM', KEYS[2], unpack(expired))
  redis.call('ZREM', KEYS[3], unpack(expired))
end
local bytes = tonumber(redis.call('GET', KEYS[4]) or '0')
if freed > 0 then
  bytes = redis.call('DECRBY', KEYS[4], freed)
end
local count = redis.call('ZCARD', KEYS[2])
local size = tonumber(ARGV[6])
if count + 1 > tonumber(ARGV[4]) or bytes + size > tonumber(ARGV[5]) then
  return {0, count, bytes}
end
local id = redis.call('INCR', KEYS[1])
local top = redis.call('ZREVRANGE', KEYS[2], 0, 0)
if top[1] and tonumber(top[1]) >= id then
  -- the counter was lost (evicted, deleted): never reuse an id
  id = tonumber(top[1]) + 1
  redis.call('SET', KEYS[1], id)
end
redis.call('HSET', prefix .. id, unpack(ARGV, 8))
redis.call('ZADD', KEYS[2], id, id)
redis.call('ZADD', KEYS[3], ARGV[7], id)
redis.call('INCRBY', KEYS[4], size)
return {1, id}
`)

// settleScript settles a parked message, atomically.
//
// KEYS: the message's key.
// ARGV: [1] the cutoff, [2] the new state, [3] by, [4] settled at, [5...]
// the fields to reply with.
//
// Reply: 0 when there is no such message (or it is past its retention);
// otherwise {1, fields} when this call settled it, {2, fields} when it was
// settled already, with the message's fields as they are now.
var settleScript = redis.NewScript(`
local at = redis.call('HGET', KEYS[1], 'parked_at')
if not at or tonumber(at) < tonumber(ARGV[1]) then
  return 0
end
local outcome = 2
if redis.call('HGET', KEYS[1], 'state') == 'parked' then
  redis.call('HSET', KEYS[1], 'state', ARGV[2], 'settled_by', ARGV[3], 'settled_at', ARGV[4])
  outcome = 1
end
return {outcome, redis.call('HMGET', KEYS[1], unpack(ARGV, 5))}
`)

// scanScript reads a chunk of ids, newest first, with some of their
// messages' fields: one round trip, and a consistent view of each.
//
// KEYS: ids.
// ARGV: [1] the bound ("+inf", or "(" .. id to start below id), [2] the
// most ids to read, [3] the message key prefix, [4...] the fields.
//
// Reply: one array per id: the id, then the fields' values (nil for a
// field the message lacks).
var scanScript = redis.NewScript(`
local ids = redis.call('ZREVRANGEBYSCORE', KEYS[1], ARGV[1], '-inf', 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
for i, id in ipairs(ids) do
  local row = redis.call('HMGET', ARGV[3] .. id, unpack(ARGV, 4))
  table.insert(row, 1, id)
  out[i] = row
end
return out
`)
