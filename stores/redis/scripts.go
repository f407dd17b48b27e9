package redisstore

import "github.com/redis/go-redis/v9"

// The record is a hash with these fields:
//
//	state         "in_progress" or "completed"
//	token         the owner's fencing token
//	fingerprint   the fingerprint given to the Claim that created the record
//	result        what Complete stored (only when completed)
//	created_at    when the owner claimed the key
//	lease_until   when the owner's lease ends (only when in progress)
//	completed_at  when Complete was called (only when completed)
//	expires_at    when the completed record is forgotten (only when completed)
//
// Times are microseconds since the Unix epoch by the server's clock. They are
// written with string.format('%d') because Lua 5.1's tostring would print
// numbers this large in exponent notation. Lua numbers are doubles, exact up
// to 2^53 µs (the year 2255).
//
// The key itself expires with the record (PEXPIREAT, rounded up to the next
// millisecond), so a lease that ended or a TTL that passed leaves no key
// behind. The scripts still compare the stored end with the clock, so that
// the answer never depends on when Redis happens to evict the key.

// The scripts, each the prelude followed by its body.
var (
	claimScript    = redis.NewScript(ClaimScript())
	completeScript = redis.NewScript(prelude + completeLua)
	releaseScript  = redis.NewScript(prelude + releaseLua)
	extendScript   = redis.NewScript(prelude + extendLua)
)

// ClaimScript returns the Lua source of the script Claim runs, with its
// arguments: KEYS[1] the storage key (the configured prefix and the key),
// ARGV[1] the new token, ARGV[2] the fingerprint and ARGV[3] the lease in
// microseconds. It lets tools that drive Redis themselves, such as
// redis-benchmark after SCRIPT LOAD, run exactly the store's claim.
func ClaimScript() string { return prelude + claimLua }

// prelude is shared by every script.
const prelude = `
-- now is the server's clock in microseconds. Scripts are replicated by
-- their effects, so replicas get the same timestamps.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])

local function int(n)
  return string.format('%d', n)
end

-- expire_at makes the key vanish at or just after until_us.
local function expire_at(until_us)
  redis.call('PEXPIREAT', KEYS[1], int(math.ceil(until_us / 1000)))
end

-- owned reports whether token holds a live lease on the key.
local function owned(token)
  local r = redis.call('HMGET', KEYS[1], 'state', 'token', 'lease_until')
  return r[1] == 'in_progress' and r[2] == token and tonumber(r[3]) > now
end
`

// claimLua takes the key for a new owner unless it is held or completed.
//
// ARGV: token (used only if acquired), fingerprint, lease in µs.
// Returns one of
//
//	{"acquired", created_at, lease_until}
//	{"in_progress", fingerprint, created_at, lease_until}
//	{"completed", fingerprint, result, created_at, completed_at, expires_at}
const claimLua = `
local r = redis.call('HMGET', KEYS[1], 'state', 'fingerprint', 'result',
  'created_at', 'lease_until', 'completed_at', 'expires_at')
local state = r[1]

-- A completed record answers every claim until it expires.
if state == 'completed' and tonumber(r[7]) > now then
  return {'completed', r[2], r[3], tonumber(r[4]), tonumber(r[6]), tonumber(r[7])}
end

-- A live lease belongs to someone else.
if state == 'in_progress' and tonumber(r[5]) > now then
  return {'in_progress', r[2], tonumber(r[4]), tonumber(r[5])}
end

-- Absent, or ended but not yet evicted: start a fresh record for the new
-- owner. DEL drops the fields of an ended record.
local lease_until = now + tonumber(ARGV[3])
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1],
  'state', 'in_progress',
  'token', ARGV[1],
  'fingerprint', ARGV[2],
  'created_at', int(now),
  'lease_until', int(lease_until))
expire_at(lease_until)
return {'acquired', now, lease_until}
`

// completeLua stores the result if the token still owns the key.
//
// ARGV: token, result, ttl in µs. Returns 1, or 0 if the token does not own
// the key (so the caller reports [stores.ErrLeaseLost]).
const completeLua = `
if not owned(ARGV[1]) then
  return 0
end
local expires_at = now + tonumber(ARGV[3])
redis.call('HDEL', KEYS[1], 'lease_until')
redis.call('HSET', KEYS[1],
  'state', 'completed',
  'result', ARGV[2],
  'completed_at', int(now),
  'expires_at', int(expires_at))
expire_at(expires_at)
return 1
`

// releaseLua deletes the record if the token still owns the key.
//
// ARGV: token. Returns 1, or 0 if the token does not own the key.
const releaseLua = `
if not owned(ARGV[1]) then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
`

// extendLua moves the lease end to lease from now if the token still
// owns the key.
//
// ARGV: token, lease in µs. Returns the new lease end, or 0 if the token
// does not own the key.
const extendLua = `
if not owned(ARGV[1]) then
  return 0
end
local lease_until = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'lease_until', int(lease_until))
expire_at(lease_until)
return lease_until
`
