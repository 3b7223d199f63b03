#!lua name=neardup
-- neardup index functions. Every key of one call shares the hash tag {ns} (one cluster slot).
-- Sequence numbers are packed as 4 big-endian bytes; a bucket value is a run of them, earliest
-- first, so membership never needs decoding here and removal keeps 4-byte alignment.
--
-- register, lookup and remove take the same KEYS, one article's keys:
--   meta, ids, docs, times, verdicts, exact shard, bucket shard 1..n
-- and the article's n bucket fields packed as one string of 8-byte fields.

local FIRST_BUCKET = 7

local function pack(seq)
  return struct.pack('>I4', seq)
end

local function field(fields, i)
  local at = (i - FIRST_BUCKET) * 8
  return string.sub(fields, at + 1, at + 8)
end

-- register: ARGV = id, content hash, registered_at, cap (members), record, fields, copies cap
-- Returns {'new', seq, first copy's seq packed or '', hot, all bucket values concatenated}
--      or {'replay', seq, record, verdict or ''}.
-- The content slot lists the first copies of a text (up to the copies cap), so deleting the
-- first copy still leaves the next one to match verbatim.
local function register(keys, args)
  local known = redis.call('HGET', keys[2], args[1])
  if known then
    local seq = struct.unpack('>I4', known)
    local rec = redis.call('HGET', keys[3], known) or ''
    local verdict = redis.call('HGET', keys[5], known) or ''
    return {'replay', seq, rec, verdict}
  end
  local seq = redis.call('HINCRBY', keys[1], 'seq', 1)
  local me = pack(seq)
  local cap = 4 * tonumber(args[4])
  local copies = redis.call('HGET', keys[6], args[2])
  local first = ''
  if copies then
    first = string.sub(copies, 1, 4)
    if #copies < 4 * tonumber(args[7]) then
      redis.call('HSET', keys[6], args[2], copies .. me)
    end
  else
    redis.call('HSET', keys[6], args[2], me)
  end
  local found = {}
  local hot = 0
  for i = FIRST_BUCKET, #keys do
    local f = field(args[6], i)
    local v = redis.call('HGET', keys[i], f)
    if not v then
      redis.call('HSET', keys[i], f, me)
    else
      found[#found + 1] = v
      if #v < cap then
        redis.call('HSET', keys[i], f, v .. me)
      else
        hot = hot + 1
      end
    end
  end
  redis.call('HSET', keys[2], args[1], me)
  redis.call('HSET', keys[3], me, args[5])
  redis.call('ZADD', keys[4], args[3], me)
  return {'new', seq, first, hot, table.concat(found)}
end

-- lookup (read only): ARGV = content hash, fields
-- Returns {first copy's seq packed or '', all bucket values concatenated}
local function lookup(keys, args)
  local first = string.sub(redis.call('HGET', keys[6], args[1]) or '', 1, 4)
  local found = {}
  for i = FIRST_BUCKET, #keys do
    found[#found + 1] = redis.call('HGET', keys[i], field(args[2], i)) or ''
  end
  return {first, table.concat(found)}
end

-- take one packed seq out of a hash field's run of seqs (4-byte aligned); drop emptied fields
local function take_out(key, f, me)
  local v = redis.call('HGET', key, f)
  if not v then return end
  local pos = 1
  while true do
    local s = string.find(v, me, pos, true)
    if not s then return end
    if (s - 1) % 4 == 0 then
      if #v == 4 then
        redis.call('HDEL', key, f)
      else
        redis.call('HSET', key, f, string.sub(v, 1, s - 1) .. string.sub(v, s + 4))
      end
      return
    end
    pos = s + 1
  end
end

-- remove: ARGV = packed seq, id, content hash, fields
-- Deletes the article everywhere, buckets included. Returns 1 if it was there.
local function remove(keys, args)
  local me = args[1]
  if redis.call('HEXISTS', keys[3], me) == 0 then return 0 end
  for i = FIRST_BUCKET, #keys do
    take_out(keys[i], field(args[4], i), me)
  end
  take_out(keys[6], args[3], me)
  if redis.call('HGET', keys[2], args[2]) == me then redis.call('HDEL', keys[2], args[2]) end
  redis.call('HDEL', keys[3], me)
  redis.call('HDEL', keys[5], me)
  redis.call('ZREM', keys[4], me)
  return 1
end

-- scheme: KEYS = meta; ARGV = scheme bytes. Returns the stored scheme (set if absent).
local function scheme(keys, args)
  redis.call('HSETNX', keys[1], 'scheme', args[1])
  return redis.call('HGET', keys[1], 'scheme')
end

-- put_verdicts: KEYS = docs, verdicts; ARGV = packed seq 1, verdict 1, ... Skips deleted seqs.
local function put_verdicts(keys, args)
  local n = 0
  for i = 1, #args, 2 do
    if redis.call('HEXISTS', keys[1], args[i]) == 1 then
      redis.call('HSET', keys[2], args[i], args[i + 1])
      n = n + 1
    end
  end
  return n
end

redis.register_function('neardup_put_verdicts', put_verdicts)
redis.register_function('neardup_register', register)
redis.register_function{function_name='neardup_lookup', callback=lookup, flags={'no-writes'}}
redis.register_function('neardup_remove', remove)
redis.register_function('neardup_scheme', scheme)
