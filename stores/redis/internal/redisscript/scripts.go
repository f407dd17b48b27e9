// Package redisscript holds the layout of the Redis store's records and
// the Lua source of the scripts that change them (package stores/redis
// runs them, and writes a new record itself with one native command).
//
// A record is one Redis string, packed:
//
//	1 <state> <flag> | token | created | t1 | t2 | extend id | released | fingerprint length | fingerprint result
//
// with no spaces but inside released. state is p (in progress), c
// (completed) or r (released: a record that only remembers Releases).
// created is when the owner claimed the key; t1 is the lease end of a
// record in progress and the completion time of a completed one; t2 is a
// completed record's expiry. Times are microseconds since the Unix epoch.
// The extend id is the call id of the owner's last Extend; released holds
// the Releases of the key that succeeded and whose leases have not ended
// yet ("<call id>:<lease end>", separated by spaces, the latest last, at
// most 16), which later owners' records carry on; the fingerprint is
// fingerprint-length bytes, and the result the rest of the value. Tokens
// and call ids are hex, so no field but the last two holds a "|".
//
// The key expires with the record: when its lease ends, or when its TTL
// does. So the server's clock decides, and a key whose lease ended is
// absent. flag says what else: k when the key's expiry is the record's own
// end, o when the key outlives it, kept for a remembered Release whose
// lease ends later; the record's own end, by the server's clock, then
// decides. A record with flag k may have been written by a Claim's native
// command, whose created and t1 the client derived from its own clock as
// it sent the command: they are what the Claim reported, never what
// decides.
//
// A Claim of an absent key is one native command, SET key <record> NX PX
// <lease> GET, which creates the record or, when the key exists, answers
// what it holds: a completed record, another owner's, or the Claim's own
// when the client resends it. The store runs the claim script only when
// that answer needs the server's clock (flag o, a released record) or is
// a hash, the layout before this one: until such records expire, every
// script reads them as well (see legacy) and rewrites them in this one.
//
// Every call is safe to run again: a client resends a call whose reply it
// lost (go-redis does, by default), and the call then answers as it did
// the first time and changes nothing more, while the lease or the record
// it wrote lives. A Claim recognises its own token (drawn by the client
// before the call), a Complete its token and result, an Extend the call id
// it stored with the lease, and a Release the call id it left in the
// released field.
package redisscript

// The scripts, each the prelude followed by its body. Complete has two:
// one for a call alone, the only kind a Cluster runs, and, for a batch on
// one server, one that runs the same function on every key of the batch.
// Every script but the batch one touches only KEYS[1].
const (
	ClaimOne      = prelude + claimLua + `return claim(KEYS[1], ARGV[1], ARGV[2], ARGV[3])`
	CompleteOne   = prelude + completeLua + `return complete(KEYS[1], ARGV[1], ARGV[2], ARGV[3])`
	CompleteBatch = prelude + completeLua + eachLua + `return each(complete)`
	Release       = prelude + releaseLua
	Extend        = prelude + extendLua
	Lookup        = prelude + lookupLua
	Remove        = prelude + removeLua
)

// prelude is shared by every script: the clock, and reading and writing a
// record.
const prelude = `
-- now is the server's clock in microseconds. Scripts are replicated by
-- their effects, so replicas get the same records.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])

-- int prints n whole: Lua 5.1's tostring would print numbers this large
-- in exponent notation. Lua numbers are doubles, exact up to 2^53 µs (the
-- year 2255).
local function int(n)
  if not n then
    return ''
  end
  return string.format('%d', n)
end

-- decode reads a packed record.
local function decode(v)
  local state, flag, token, created, t1, t2, ext, released, n, at = string.match(v,
    '^1([pcr])([ko])|([^|]*)|(%d*)|(%d*)|(%d*)|([^|]*)|([^|]*)|(%d+)|()')
  if not state then
    error('unreadable record')
  end
  n = tonumber(n)
  return {state = state, timed = flag == 'o', token = token,
    created = tonumber(created), t1 = tonumber(t1), t2 = tonumber(t2),
    ext = ext, released = released,
    fp = string.sub(v, at, at + n - 1), result = string.sub(v, at + n)}
end

-- legacy reads a record of the earlier layout, a hash of these fields:
-- state ("in_progress" or "completed"), token, fingerprint, result,
-- created_at, lease_until, completed_at, expires_at, extend_id and
-- released, with times by the server's clock, which decide.
local function legacy(key)
  local r = redis.call('HMGET', key, 'state', 'token', 'fingerprint', 'result',
    'created_at', 'lease_until', 'completed_at', 'expires_at', 'extend_id', 'released')
  local rec = {state = 'r', timed = true, token = r[2] or '', fp = r[3] or '',
    result = r[4] or '', created = tonumber(r[5]), ext = r[9] or '', released = r[10] or ''}
  if r[1] == 'in_progress' then
    rec.state, rec.t1 = 'p', tonumber(r[6])
  elseif r[1] == 'completed' then
    rec.state, rec.t1, rec.t2 = 'c', tonumber(r[7]), tonumber(r[8])
  end
  return rec
end

-- read returns key's record, or nil when the key is absent.
local function read(key)
  local v = redis.pcall('GET', key)
  if type(v) == 'table' then
    return legacy(key) -- not a string: a hash of the earlier layout
  end
  if v then
    return decode(v)
  end
  return nil
end

-- own is the end of rec's own lease (in progress) or TTL (completed) by
-- the server's clock: the key's expiry, unless the key outlives it.
local function own(key, rec)
  if rec.timed then
    if rec.state == 'c' then
      return rec.t2
    end
    return rec.t1 or 0
  end
  return now + redis.call('PTTL', key) * 1000
end

-- live reports whether rec, read from key, is in progress or completed,
-- its lease or TTL not ended.
local function live(key, rec)
  return rec.state ~= 'r' and (not rec.timed or own(key, rec) > now)
end

-- write stores rec at key. The key vanishes at or just after end_us, the
-- end of rec's own lease or TTL (0 for a released record), or when the
-- last Release rec remembers would have ended, if later; entry, when
-- given, is a Release to remember. A record that ends and remembers
-- nothing is deleted.
local function write(key, rec, end_us, entry)
  local kept, last = {}, 0
  for e, ends in string.gmatch(rec.released, '(%S+:(%d+))') do
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
  local flag, until_us = 'k', end_us
  if last > end_us then
    flag, until_us = 'o', last
  end
  if until_us <= now then
    redis.call('DEL', key)
    return
  end
  redis.call('SET', key, table.concat({'1', rec.state, flag, '|', rec.token, '|',
    int(rec.created), '|', int(rec.t1), '|', int(rec.t2), '|', rec.ext, '|',
    table.concat(kept, ' '), '|', int(#rec.fp), '|', rec.fp, rec.result}),
    'PXAT', int(math.ceil(until_us / 1000)))
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

// claimLua takes key for a new owner unless it is held or completed: the
// Claims the native command cannot answer alone. An ended or released
// record is replaced, its remembered Releases carried on. A record in
// progress for this call's own token is this call's claim, made by a
// first run of it whose reply was lost: it answers acquired again.
//
// Arguments: token (used only if acquired), fingerprint, lease in µs.
// Returns one of
//
//	{"acquired", created_at, lease_until}
//	{"in_progress", fingerprint, created_at, lease_until}
//	{"completed", fingerprint, result, created_at, completed_at, expires_at}
const claimLua = `
local function claim(key, token, fingerprint, lease)
  local rec = read(key)
  if rec and live(key, rec) then
    if rec.state == 'c' then
      return {'completed', rec.fp, rec.result, rec.created, rec.t1, rec.t2}
    end
    if rec.token == token then
      return {'acquired', rec.created, rec.t1}
    end
    return {'in_progress', rec.fp, rec.created, rec.t1}
  end
  local until_us = now + tonumber(lease)
  write(key, {state = 'p', token = token, fp = fingerprint, result = '', ext = '',
    created = now, t1 = until_us, released = rec and rec.released or ''}, until_us)
  return {'acquired', now, until_us}
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
  local rec = read(key)
  if not rec or rec.token ~= token or not live(key, rec) then
    return 0
  end
  if rec.state == 'c' then
    if rec.result == result then
      return 1
    end
    return 0
  end
  local expires_at = now + tonumber(ttl)
  rec.state, rec.result, rec.t1, rec.t2, rec.ext = 'c', result, now, expires_at, ''
  write(key, rec, expires_at)
  return 1
end
`

// releaseLua ends the record if the token still owns the key, and leaves
// the call's id in its released field until the lease would have ended:
// a later owner's record carries the field on, so the same call run again
// finds it there and answers as it did, even once the key was claimed
// anew. The call id is drawn by the client for each call.
//
// ARGV: token, call id. Returns 1, or 0 if the token does not own the key.
const releaseLua = `
local rec = read(KEYS[1])
if rec and rec.state == 'p' and rec.token == ARGV[1] and live(KEYS[1], rec) then
  local ends = own(KEYS[1], rec)
  write(KEYS[1], {state = 'r', token = '', fp = '', result = '', ext = '',
    released = rec.released}, 0, ARGV[2] .. ':' .. int(ends))
  return 1
end
for id, ends in string.gmatch(rec and rec.released or '', '(%S+):(%d+)') do
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
local rec = read(KEYS[1])
if not rec or rec.state ~= 'p' or rec.token ~= ARGV[1] or not live(KEYS[1], rec) then
  return 0
end
if rec.ext == ARGV[3] then
  return rec.t1
end
rec.t1, rec.ext = now + tonumber(ARGV[2]), ARGV[3]
write(KEYS[1], rec, rec.t1)
return rec.t1
`

// lookupLua reads the live record, changing nothing.
//
// Returns one of
//
//	{"absent"}
//	{"in_progress", token, fingerprint, created_at, lease_until}
//	{"completed", token, fingerprint, result, created_at, completed_at, expires_at}
const lookupLua = `
local rec = read(KEYS[1])
if not rec or not live(KEYS[1], rec) then
  return {'absent'}
end
if rec.state == 'p' then
  return {'in_progress', rec.token, rec.fp, rec.created, rec.t1}
end
return {'completed', rec.token, rec.fp, rec.result, rec.created, rec.t1, rec.t2}
`

// removeLua deletes the live record whose token is ARGV[1] and state
// ARGV[2] ("in_progress" or "completed"). Returns 1, or 0 if there is no
// such record.
const removeLua = `
local rec = read(KEYS[1])
local states = {p = 'in_progress', c = 'completed'}
if not rec or rec.token ~= ARGV[1] or states[rec.state] ~= ARGV[2] or not live(KEYS[1], rec) then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
`
