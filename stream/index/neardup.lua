#!lua name=neardup
-- neardup index functions. Sequence numbers are packed as 4 big-endian bytes; a bucket value is a
-- run of them, earliest first, so membership never needs decoding here and removal keeps 4-byte
-- alignment.
--
-- Keys. register_many, lookup and remove_many declare the same KEYS, the namespace's keys:
--   meta, ids, docs, times, verdicts            (nd:{ns}:m, :i, :d, :t, :v)
-- The shard keys an article touches (nd:{ns}:x:<hex>, nd:{ns}:b:<hex>) are not declared: they are
-- derived here from the namespace base (KEYS[1] without its final 'm') and the top shard_bits
-- bits of the content hash or bucket field, exactly as stream/keys.py names them. A call then
-- carries a few keys instead of one per bucket. Every derived key carries the same hash tag {ns}
-- as the declared ones, so it is in their cluster slot (Redis Cluster checks the slot of every key
-- a script touches, declared or not, and serves same-slot keys), and it starts with 'nd:', so an
-- ACL key pattern ~nd:* covers it (Redis checks a script's every command against the ACL).
-- Bucket fields are passed packed, one string of 8-byte big-endian bucket ids per article.

local function pack(seq)
  return struct.pack('>I4', seq)
end

-- Hex digits of a byte, built once at load (the string library is not available then):
-- HEX2[b] is zero-padded to two digits, HEX1[b] has no leading zero ('0' for 0).
local HEX1, HEX2 = {}, {}
do
  local digits = {'0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'}
  for b = 0, 255 do
    local hi, lo = digits[(b - b % 16) / 16 + 1], digits[b % 16 + 1]
    HEX2[b] = hi .. lo
    HEX1[b] = b < 16 and lo or hi .. lo
  end
end

-- The one shard-key layout of the namespace of KEYS (the base is KEYS[1], nd:{ns}:m, without
-- its 'm'): returns shard_key(prefix, s) and the exact-slot and bucket prefixes. shard_key names
-- the shard of a content hash or bucket field s: prefix .. the lower-case hex, no leading zeros,
-- of the top shard_bits bits of s (big-endian; shard_bits <= 24, so 3 bytes suffice).
local function shard_layout(keys, shard_bits)
  local bits = tonumber(shard_bits)
  if not bits or bits < 1 or bits > 24 or bits % 1 ~= 0 then
    error('shard_bits must be an integer in [1, 24]')
  end
  local byte = string.byte
  local div = 2 ^ (24 - bits)
  local base = string.sub(keys[1], 1, -2)
  local function shard_key(prefix, s)
    local a, b, c = byte(s, 1, 3)
    local top = a * 65536 + b * 256 + c
    top = (top - top % div) / div
    local lo = top % 256
    if top < 256 then return prefix .. HEX1[lo] end
    top = (top - lo) / 256
    local mid = top % 256
    if top < 256 then return prefix .. HEX1[mid] .. HEX2[lo] end
    return prefix .. HEX1[(top - mid) / 256] .. HEX2[mid] .. HEX2[lo]
  end
  return shard_key, base .. 'x:', base .. 'b:'
end

-- Articles of one register_many call come packed in one string (one argument instead of five
-- per article, which is what clients spend most on when they build a call). Each article is
--   header '>HBI4H' (id length, registered_at length, record length, number of bucket fields),
--   id, content hash (16 bytes), registered_at (decimal text), record, fields (8 bytes each).
-- Returns parallel tables: ids, contents, times, records, fields.
local function unpack_articles(blob, n)
  local sub, unpack_head = string.sub, struct.unpack
  local ids, contents, times, records, fields = {}, {}, {}, {}, {}
  local pos = 1
  for k = 1, n do
    local id_len, at_len, rec_len, nf, p = unpack_head('>HBI4H', blob, pos)
    ids[k] = sub(blob, p, p + id_len - 1)
    p = p + id_len
    contents[k] = sub(blob, p, p + 15)
    p = p + 16
    times[k] = sub(blob, p, p + at_len - 1)
    p = p + at_len
    records[k] = sub(blob, p, p + rec_len - 1)
    p = p + rec_len
    fields[k] = sub(blob, p, p + 8 * nf - 1)
    pos = p + 8 * nf
  end
  if pos ~= #blob + 1 then error('register_many: packed articles do not match their count') end
  return ids, contents, times, records, fields
end

-- register_many: ARGV = shard_bits, cap (members), copies cap, number of articles, the articles
-- packed (see unpack_articles).
-- Registers and probes the articles in order, each exactly as if alone (the whole call is
-- atomic). Returns 4 values per article, in order:
--   seq, hot, first copy's seq packed or '', all bucket values read concatenated      (new)
--   seq, -1, record, verdict or ''                                                  (replay)
-- The content slot lists the first copies of a text (up to the copies cap), so deleting the
-- first copy still leaves the next one to match verbatim. A bucket holds at most cap seqs, the
-- earliest; past the cap an article still reads it and counts it in hot. Most slots and buckets
-- are new: HSETNX adds the article to those in one command, HGET and HSET only follow for one
-- that existed.
local function register_many(keys, args)
  local call, sub, concat = redis.call, string.sub, table.concat
  local meta, ids, docs, times, verdicts = keys[1], keys[2], keys[3], keys[4], keys[5]
  local shard_key, xprefix, bprefix = shard_layout(keys, args[1])
  local cap = 4 * tonumber(args[2])
  local copies_cap = 4 * tonumber(args[3])
  local n = tonumber(args[4])
  if not n or n < 1 or n % 1 ~= 0 or #args ~= 5 then
    error('register_many: ARGV must be shard_bits, cap, copies cap, count, packed articles')
  end
  local wanted, contents, ats, records, all_fields = unpack_articles(args[5], n)
  local known = call('HMGET', ids, unpack(wanted))
  local seq = tonumber(call('HGET', meta, 'seq') or '0')
  local fresh, fresh_rec = {}, {} -- id -> packed seq, record of the articles this call adds
  local new_ids, new_docs, new_times, w = {}, {}, {}, 0
  local out, o = {}, 0
  for k = 1, n do
    local id = wanted[k]
    local mine = known[k]
    if mine then
      out[o + 1], out[o + 2] = struct.unpack('>I4', mine), -1
      out[o + 3] = call('HGET', docs, mine) or ''
      out[o + 4] = call('HGET', verdicts, mine) or ''
    elseif fresh[id] then
      out[o + 1], out[o + 2] = struct.unpack('>I4', fresh[id]), -1
      out[o + 3], out[o + 4] = fresh_rec[id], ''
    else
      local content, record, fields = contents[k], records[k], all_fields[k]
      seq = seq + 1
      local me = pack(seq)
      local first = ''
      local xkey = shard_key(xprefix, content)
      if call('HSETNX', xkey, content, me) == 0 then
        local copies = call('HGET', xkey, content)
        first = sub(copies, 1, 4)
        if #copies < copies_cap then call('HSET', xkey, content, copies .. me) end
      end
      local found, nf, hot = {}, 0, 0
      for at = 1, #fields, 8 do
        local f = sub(fields, at, at + 7)
        local bkey = shard_key(bprefix, f)
        if call('HSETNX', bkey, f, me) == 0 then
          local v = call('HGET', bkey, f)
          nf = nf + 1
          found[nf] = v
          if #v < cap then
            call('HSET', bkey, f, v .. me)
          else
            hot = hot + 1
          end
        end
      end
      fresh[id], fresh_rec[id] = me, record
      new_ids[w + 1], new_ids[w + 2] = id, me
      new_docs[w + 1], new_docs[w + 2] = me, record
      new_times[w + 1], new_times[w + 2] = ats[k], me
      w = w + 2
      out[o + 1], out[o + 2], out[o + 3], out[o + 4] = seq, hot, first, concat(found)
    end
    o = o + 4
  end
  if w > 0 then
    call('HSET', meta, 'seq', string.format('%d', seq))
    call('HSET', ids, unpack(new_ids))
    call('HSET', docs, unpack(new_docs))
    call('ZADD', times, unpack(new_times))
  end
  return out
end

-- lookup (read only; registered as neardup_probe, a new name for a new argument layout, like
-- neardup_put_verdicts_packed): ARGV = shard_bits, content hash, fields
-- Returns {first copy's seq packed or '', all bucket values concatenated}
local function lookup(keys, args)
  local call, sub = redis.call, string.sub
  local shard_key, xprefix, bprefix = shard_layout(keys, args[1])
  local content, fields = args[2], args[3]
  local first = sub(call('HGET', shard_key(xprefix, content), content) or '', 1, 4)
  local found = {}
  for at = 1, #fields, 8 do
    local f = sub(fields, at, at + 7)
    found[#found + 1] = call('HGET', shard_key(bprefix, f), f) or ''
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

-- remove_many: ARGV = shard_bits, then 4 per article: packed seq, id, content hash, fields
-- Deletes each article everywhere, buckets included; one already gone is skipped. Returns how
-- many were there.
local function remove_many(keys, args)
  local call, sub = redis.call, string.sub
  local ids, docs, times, verdicts = keys[2], keys[3], keys[4], keys[5]
  local shard_key, xprefix, bprefix = shard_layout(keys, args[1])
  local removed = 0
  for a = 2, #args, 4 do
    local me, id, content, fields = args[a], args[a + 1], args[a + 2], args[a + 3]
    if call('HEXISTS', docs, me) == 1 then
      for at = 1, #fields, 8 do
        local f = sub(fields, at, at + 7)
        take_out(shard_key(bprefix, f), f, me)
      end
      take_out(shard_key(xprefix, content), content, me)
      if call('HGET', ids, id) == me then call('HDEL', ids, id) end
      call('HDEL', docs, me)
      call('HDEL', verdicts, me)
      call('ZREM', times, me)
      removed = removed + 1
    end
  end
  return removed
end

-- scheme: KEYS = meta; ARGV = scheme bytes. Returns the stored scheme (set if absent).
local function scheme(keys, args)
  redis.call('HSETNX', keys[1], 'scheme', args[1])
  return redis.call('HGET', keys[1], 'scheme')
end

-- put_verdicts (registered as neardup_put_verdicts_packed: the name changed with the argument
-- format, so a worker of another version gets "function not found" instead of a function that
-- would misread its arguments): KEYS = docs, verdicts; ARGV = verdicts packed in one string,
-- each as packed seq (4 bytes), verdict length ('>I4'), verdict. Skips deleted seqs.
local function put_verdicts(keys, args)
  local blob, sub = args[1], string.sub
  local n, pos = 0, 1
  while pos <= #blob do
    local me = sub(blob, pos, pos + 3)
    local len, p = struct.unpack('>I4', blob, pos + 4)
    if redis.call('HEXISTS', keys[1], me) == 1 then
      redis.call('HSET', keys[2], me, sub(blob, p, p + len - 1))
      n = n + 1
    end
    pos = p + len
  end
  return n
end

redis.register_function('neardup_put_verdicts_packed', put_verdicts)
redis.register_function('neardup_register_many', register_many)
redis.register_function{function_name='neardup_probe', callback=lookup, flags={'no-writes'}}
redis.register_function('neardup_remove_many', remove_many)
redis.register_function('neardup_scheme', scheme)
