package redisstore_test

// The scripts of the layout before the packed one, which kept a record as
// a hash, as they were: the upgrade test writes records with them, as a
// service of the earlier version left them in Redis.
const (
	hashClaim    = hashPrelude + hashClaimLua + `return claim(KEYS[1], ARGV[1], ARGV[2], ARGV[3])`
	hashComplete = hashPrelude + hashCompleteLua + `return complete(KEYS[1], ARGV[1], ARGV[2], ARGV[3])`
	hashRelease  = hashPrelude + hashReleaseLua
)

const hashPrelude = `
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

const hashClaimLua = `
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

const hashCompleteLua = `
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

const hashReleaseLua = `
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
