// Package redisscript holds the Lua source of the Redis store's scripts
// (package stores/redis runs them, and hands the batch claim's to tools
// that drive Redis themselves: see its ClaimBatchScript).
//
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
//	extend_id     the call id of the owner's last Extend (only when in progress)
//	released      the Releases of the key that succeeded and whose leases have
//	              not ended yet (see releaseLua); the only field of a key
//	              released and not claimed since
//
// Times are microseconds since the Unix epoch by the server's clock. They are
// written with string.format('%d') because Lua 5.1's tostring would print
// numbers this large in exponent notation. Lua numbers are doubles, exact up
// to 2^53 µs (the year 2255).
//
// The key itself expires with the record (PEXPIREAT, rounded up to the next
// millisecond), or with the last lease its released field remembers, if
// later; so a lease that ended or a TTL that passed leaves no key behind.
// The scripts still compare the stored end with the clock, so that the
// answer never depends on when Redis happens to evict the key.
//
// Every script is safe to run again: a client resends a call whose reply it
// lost (go-redis does, by default), and the script then answers as it did
// the first time and changes nothing more, while the lease or the record
// it wrote lives. A Claim recognises its own token (drawn by the client
// before the call), a Complete its token and result, an Extend the call id
// it stored with the lease, and a Release the call id it left in the
// released field, which later owners' records carry on until the released
// lease would have ended.
package redisscript

// The scripts, each the prelude followed by its body. Claim and Complete
// each have two: one for a call alone, the only kind a Cluster runs, and,
// for a batch on one server, one that runs the same function on every key
// of the batch. Every script but the batch ones touches only KEYS[1].
const (
	ClaimOne      = prelude + claimLua + `return claim(KEYS[1], ARGV[1], ARGV[2], ARGV[3])`
	CompleteOne   = prelude + completeLua + `return complete(KEYS[1], ARGV[1], ARGV[2], ARGV[3])`
	CompleteBatch = prelude + completeLua + eachLua + `return each(complete)`
	Release       = prelude + releaseLua
	Extend        = prelude + extendLua
	Lookup        = prelude + lookupLua
	Remove        = prelude + removeLua
)

// ClaimBatch is the script a batch of Claims runs on one server: KEYS are
// the storage keys (the configured prefix and the key), and ARGV holds three
// arguments per key, in the keys' order: the new token, the fingerprint and
// the lease in microseconds. The reply holds one claim reply per key, or
// that key's error.
const ClaimBatch = prelude + claimLua + eachLua + `return each(claim)`

// prelude is shared by every script.
const prelude = `
-- now is the server's clock in microseconds. Scripts are replicated by
-- their effects, so replicas get the same timestamps.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])

local function int(n)
  return string.format('%d', n)
end

-- expire_at makes key vanish at or just after until_us.
local function expire_at(key, until_us)
  redis.call('PEXPIREAT', key, int(math.ceil(until_us / 1000)))
end

-- remember rewrites key's released field, whose value the script read as
-- released (false when absent): it keeps the Releases whose leases have not
-- ended, adds entry when given, and returns the last lease end it keeps,
-- or 0. The field holds "<call id>:<lease end>" entries separated by
-- spaces, the latest last, at most 16.
local function remember(key, released, entry)
  local kept, last = {}, 0
  for e, ends in string.gmatch(released or '', '(%S+:(%d+))') do
    if tonumber(ends) > now then
      kept[#kept + 1] = e
      last = math.max(last, tonumber(ends))
    end
  end
  if entry then
    kept[#kept + 1] = entry
    last = math.max(last, tonumber(string.match(entry, ':(%d+)$')))
  end
  while #kept > 16 do
    table.remove(kept, 1)
  end
  if #kept > 0 then
    redis.call('HSET', key, 'released', table.concat(kept, ' '))
  elseif released then
    redis.call('HDEL', key, 'released')
  end
  return last
end

-- keep makes key vanish at or just after until_us, or when the last lease
-- its released field remembers ends, if later. released is the field as
-- read before the script wrote the record.
local function keep(key, until_us, released)
  if released then
    until_us = math.max(until_us, remember(key, released))
  end
  expire_at(key, until_us)
end
`

// eachLua runs a function of a key and three arguments on every key, with
// that key's three arguments, and replies with the replies in the keys'
// order. A call that fails puts its error in its place and the others go
// on, so that a batch's calls succeed and fail one by one, as they would
// alone.
const eachLua = `
local function each(fn)
  local out = {}
  for i, key in ipairs(KEYS) do
    local ok, reply = pcall(fn, key, ARGV[3*i-2], ARGV[3*i-1], ARGV[3*i])
    if ok or type(reply) == 'table' then
      out[i] = reply -- a reply, or the error reply redis.call raised
    else
      out[i] = redis.error_reply(tostring(reply))
    end
  end
  return out
end
`

// claimLua takes key for a new owner unless it is held or completed. An
// ended record is replaced whole, but for its released field. A record in
// progress for this call's own token is this call's claim, made by a first
// run of it whose reply was lost: it answers acquired again.
//
// Arguments: token (used only if acquired), fingerprint, lease in µs.
// Returns one of
//
//	{"acquired", created_at, lease_until}
//	{"in_progress", fingerprint, created_at, lease_until}
//	{"completed", fingerprint, result, created_at, completed_at, expires_at}
const claimLua = `
local function claim(key, token, fingerprint, lease)
  local r = redis.call('HMGET', key, 'state', 'fingerprint', 'result',
    'created_at', 'lease_until', 'completed_at', 'expires_at', 'token', 'released')
  local state = r[1]

  -- A completed record answers every claim until it expires.
  if state == 'completed' and tonumber(r[7]) > now then
    return {'completed', r[2], r[3], tonumber(r[4]), tonumber(r[6]), tonumber(r[7])}
  end

  -- A live lease belongs to someone else, or to this very call.
  if state == 'in_progress' and tonumber(r[5]) > now then
    if r[8] == token then
      return {'acquired', tonumber(r[4]), tonumber(r[5])}
    end
    return {'in_progress', r[2], tonumber(r[4]), tonumber(r[5])}
  end

  -- Absent, released, or ended but not yet evicted: start a fresh record
  -- for the new owner. DEL drops the fields of an ended record; an absent
  -- one has none, and skipping the call spares the common case a fifth of
  -- its server time.
  local lease_until = now + tonumber(lease)
  if state then
    redis.call('DEL', key)
  end
  redis.call('HSET', key,
    'state', 'in_progress',
    'token', token,
    'fingerprint', fingerprint,
    'created_at', int(now),
    'lease_until', int(lease_until))
  keep(key, lease_until, r[9])
  return {'acquired', now, lease_until}
end
`

// completeLua stores the result if token still owns key. A record that
// token completed with the same result answers as the Complete that did it
// (the same call run again, or the same result stored again) and is left
// as it is.
//
// Arguments: token, result, ttl in µs. Returns 1, or 0 if the token does
// not own the key (so the store reports stores.ErrLeaseLost).
const completeLua = `
local function complete(key, token, result, ttl)
  local r = redis.call('HMGET', key, 'state', 'token', 'lease_until', 'expires_at', 'released')
  if r[2] ~= token then
    return 0
  end
  if r[1] == 'completed' then
    if tonumber(r[4]) > now and redis.call('HGET', key, 'result') == result then
      return 1
    end
    return 0
  end
  if r[1] ~= 'in_progress' or tonumber(r[3]) <= now then
    return 0
  end
  local expires_at = now + tonumber(ttl)
  redis.call('HDEL', key, 'lease_until', 'extend_id')
  redis.call('HSET', key,
    'state', 'completed',
    'result', result,
    'completed_at', int(now),
    'expires_at', int(expires_at))
  keep(key, expires_at, r[5])
  return 1
end
`

// releaseLua deletes the record if the token still owns the key, and
// leaves the call's id in the released field until the lease would have
// ended: a later owner's record carries the field on, so the same call run
// again finds it there and answers as it did, even once the key was
// claimed anew. The call id is drawn by the client for each call.
//
// ARGV: token, call id. Returns 1, or 0 if the token does not own the key.
const releaseLua = `
local r = redis.call('HMGET', KEYS[1], 'state', 'token', 'lease_until', 'released')
if r[1] == 'in_progress' and r[2] == ARGV[1] and tonumber(r[3]) > now then
  redis.call('DEL', KEYS[1])
  expire_at(KEYS[1], remember(KEYS[1], r[4], ARGV[2] .. ':' .. r[3]))
  return 1
end
for id, ends in string.gmatch(r[4] or '', '(%S+):(%d+)') do
  if id == ARGV[2] and tonumber(ends) > now then
    return 1
  end
end
return 0
`

// extendLua moves the lease end to lease from now if the token still
// owns the key, and stores the call's id: the same call run again finds it
// and answers the lease end it set, moving nothing. The call id is drawn by
// the client for each call.
//
// ARGV: token, lease in µs, call id. Returns the new lease end, or 0 if
// the token does not own the key.
const extendLua = `
local r = redis.call('HMGET', KEYS[1], 'state', 'token', 'lease_until', 'extend_id', 'released')
if r[1] ~= 'in_progress' or r[2] ~= ARGV[1] or tonumber(r[3]) <= now then
  return 0
end
if r[4] == ARGV[3] then
  return tonumber(r[3])
end
local lease_until = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'lease_until', int(lease_until), 'extend_id', ARGV[3])
keep(KEYS[1], lease_until, r[5])
return lease_until
`

// lookupLua reads the live record, changing nothing.
//
// Returns one of
//
//	{"absent"}
//	{"in_progress", token, fingerprint, created_at, lease_until}
//	{"completed", token, fingerprint, result, created_at, completed_at, expires_at}
const lookupLua = `
local r = redis.call('HMGET', KEYS[1], 'state', 'token', 'fingerprint', 'result',
  'created_at', 'lease_until', 'completed_at', 'expires_at')
if r[1] == 'in_progress' and tonumber(r[6]) > now then
  return {'in_progress', r[2], r[3], tonumber(r[5]), tonumber(r[6])}
end
if r[1] == 'completed' and tonumber(r[8]) > now then
  return {'completed', r[2], r[3], r[4], tonumber(r[5]), tonumber(r[7]), tonumber(r[8])}
end
return {'absent'}
`

// removeLua deletes the live record whose token is ARGV[1] and state
// ARGV[2]. Returns 1, or 0 if there is no such record.
const removeLua = `
local r = redis.call('HMGET', KEYS[1], 'state', 'token', 'lease_until', 'expires_at')
local ends = r[3]
if r[1] == 'completed' then
  ends = r[4]
end
if r[1] ~= ARGV[2] or r[2] ~= ARGV[1] or not ends or tonumber(ends) <= now then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
`
