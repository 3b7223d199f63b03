#!lua name=neardup
-- neardup index functions, storage format 3. Sequence numbers are packed as 8 big-endian bytes
-- (struct '>I8'); Lua numbers are doubles, exact up to 2^53, so a namespace refuses a call that
-- could take its counter past 2^53 (NEARDUP_SEQ_EXHAUSTED) rather than wrap. A bucket value is a
-- run of packed seqs, earliest first, so membership never needs decoding here and removal keeps
-- 8-byte alignment.
--
-- Keys. register64k, probe64k, check64k, remove64k and forget64 start their KEYS with the
-- namespace's keys:
--   meta, ids, docs, times, verdicts, deleted   (nd:{ns}:m, :i, :d, :t, :v, :g)
-- then (all but forget64, which touches no shard) the distinct shard keys of the call's articles
-- (nd:{ns}:x:<hex>, nd:{ns}:b:<hex>, stream/index/redis/keys.py shard_keys), in any order. A shard key's name
-- is derived here from the namespace base (KEYS[1] without its final 'm') and the top shard_bits
-- bits of the content hash or bucket field, exactly as stream/index/redis/keys.py names them, and a call that
-- did not declare one is refused before it writes anything: Redis Cluster checks only the
-- declared keys before running a function (their slot is served here, not migrating), so an
-- undeclared key could fail half-way and leave half the writes. Every key carries the hash tag {ns}
-- (one cluster slot) and starts with 'nd:', so an ACL key pattern ~nd:* covers it.
-- Bucket fields are passed packed, one string of 8-byte big-endian bucket ids per article.
--
-- Function names follow argument layouts: a changed layout gets a new name, so a worker of
-- another version gets "function not found" instead of a function that misreads its arguments.
-- Errors a caller must tell apart are replies with their own code: NEARDUP_SCHEME <stored scheme>
-- and NEARDUP_SEQ_EXHAUSTED, both returned before anything is written.

local SEQ_BYTES = 8
local MAX_SEQ = 2 ^ 53

local function pack(seq)
  return struct.pack('>I8', seq)
end

local function unpack_seq(packed)
  return (struct.unpack('>I8', packed))
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
local function shard_layout_at(base, shard_bits)
  local bits = tonumber(shard_bits)
  if not bits or bits < 1 or bits > 24 or bits % 1 ~= 0 then
    error('shard_bits must be an integer in [1, 24]')
  end
  local byte = string.byte
  local div = 2 ^ (24 - bits)
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

local function shard_layout(keys, shard_bits)
  return shard_layout_at(string.sub(keys[1], 1, -2), shard_bits)
end

-- The shard keys a call declared (KEYS[from] on, 7 unless given), as a set.
local function declared_shards(keys, from)
  local set = {}
  for k = from or 7, #keys do set[keys[k]] = true end
  return set
end

-- key, checked against the declared set (before any write: see Keys above)
local function checked(set, key)
  if not set[key] then error('neardup: key ' .. key .. ' is not declared in KEYS') end
  return key
end

-- Articles of one register64k call come packed in one string (one argument instead of five
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
  if pos ~= #blob + 1 then error('register64k: packed articles do not match their count') end
  return ids, contents, times, records, fields
end

-- The first live copy in a content slot's run of copies (earliest first). With a retention
-- window (live_after, a time) a copy registered before it is past retention even while the sweep
-- has not removed it yet, and the live copies behind it must still be seen; a copy this call
-- registered (in mine, not yet in times) is live. Without a window (nil) the first copy.
local function first_live(times, copies, live_after, mine)
  if live_after == nil then return string.sub(copies, 1, SEQ_BYTES) end
  for at = 1, #copies, SEQ_BYTES do
    local c = string.sub(copies, at, at + SEQ_BYTES - 1)
    if mine[c] then return c end
    local t = redis.call('ZSCORE', times, c)
    if t and tonumber(t) >= live_after then return c end
  end
  return ''
end

-- '' (no bound) or a number
local function optional_number(arg, what)
  if arg == '' then return nil end
  local v = tonumber(arg)
  if not v then error(what .. ' must be a number or empty') end
  return v
end

-- register64k (was register64: shard keys declared in KEYS, see Keys above):
-- ARGV = shard_bits, cap (members), copies cap, number of articles, the articles packed (see
-- unpack_articles), scheme ('' = not checked), live_after ('' = no retention), forget_before
-- ('' = keep every remembered deletion), and optionally touch: '1' makes a call that registers
-- nothing (every article a replay) still write one field (meta 'touch'), so that a WAIT sent
-- after it on the same connection covers every earlier write of the namespace, including those
-- of a worker that died before its own WAIT.
-- First, before any write: the namespace's scheme is compared with the caller's and set if absent
-- (so a namespace whose data was lost is claimed again by the first registration, atomically),
-- deletions remembered since before forget_before are forgotten, and a call that could take the
-- counter past 2^53 is refused. Then registers and probes the articles in order, each exactly as
-- if alone (the whole call is atomic). Returns 4 values per article, in order:
--   seq, hot, first live copy's seq packed or '', all bucket values read concatenated   (new)
--   seq, -1, record, verdict or ''                                                  (replay)
--   0, -2, '', ''                                        (deleted: an id remembered as deleted)
-- The content slot lists the first copies of a text (up to the copies cap), so deleting or
-- expiring the first copy still leaves the next one to match verbatim. A bucket holds at most cap
-- seqs, the earliest; past the cap an article still reads it and counts it in hot. Most slots and
-- buckets are new: HSETNX adds the article to those in one command, HGET and HSET only follow for
-- one that existed.
local function register_articles(keys, args, hashes)
  local call, sub, concat = redis.call, string.sub, table.concat
  local meta, ids, docs, times, verdicts, deleted = keys[1], keys[2], keys[3], keys[4], keys[5],
    keys[6]
  local shard_key, xprefix, bprefix = shard_layout(keys, args[1])
  local cap = SEQ_BYTES * tonumber(args[2])
  local copies_cap = SEQ_BYTES * tonumber(args[3])
  local n = tonumber(args[4])
  if not n or n < 1 or n % 1 ~= 0 or (#args ~= 8 and #args ~= 9) then
    error('register64k: ARGV must be shard_bits, cap, copies cap, count, packed articles, '
      .. 'scheme, live_after, forget_before[, touch]')
  end
  local scheme, live_after = args[6], optional_number(args[7], 'live_after')
  local forget_before = optional_number(args[8], 'forget_before')
  local wanted, contents, ats, records, all_fields = unpack_articles(args[5], n)
  -- every shard key of every article, checked before the first write
  local shards = declared_shards(keys, hashes and 8)
  local xkeys, bkeys = {}, {}
  for k = 1, n do
    xkeys[k] = checked(shards, shard_key(xprefix, contents[k]))
    local fields, bk = all_fields[k], {}
    if hashes and #fields ~= 8 and #fields ~= 0 then
      error('register_home64: one id hash or none an article')
    end
    for at = 1, hashes and 0 or #fields, 8 do
      bk[#bk + 1] = checked(shards, shard_key(bprefix, sub(fields, at, at + 7)))
    end
    bkeys[k] = bk
  end
  if scheme ~= '' then
    local stored = call('HGET', meta, 'scheme')
    if not stored then
      call('HSET', meta, 'scheme', scheme)
    elseif stored ~= scheme then
      return redis.error_reply('NEARDUP_SCHEME ' .. stored)
    end
  end
  local seq = tonumber(call('HGET', meta, 'seq') or '0')
  if seq > MAX_SEQ - n then -- (seq + n would round: 2^53 + 1 is not a double)
    return redis.error_reply('NEARDUP_SEQ_EXHAUSTED the namespace counter is at '
      .. string.format('%d', seq) .. '; sequence numbers stop at 2^53')
  end
  if forget_before then -- (ZRANGEBYSCORE and ZREM: commands the worker's ACL already allows)
    local old = call('ZRANGEBYSCORE', deleted, '-inf', '(' .. string.format('%.17g', forget_before))
    for lo = 1, #old, 4096 do call('ZREM', deleted, unpack(old, lo, math.min(lo + 4095, #old))) end
  end
  local known = call('HMGET', ids, unpack(wanted))
  local fresh, fresh_rec = {}, {} -- id -> packed seq, record of the articles this call adds
  local added = {} -- packed seqs this call adds
  local new_ids, new_docs, new_times, w = {}, {}, {}, 0
  local out, o = {}, 0
  for k = 1, n do
    local id = wanted[k]
    local mine = known[k]
    if call('ZSCORE', deleted, id) then
      out[o + 1], out[o + 2], out[o + 3], out[o + 4] = 0, -2, '', ''
    elseif mine then
      out[o + 1], out[o + 2] = unpack_seq(mine), -1
      out[o + 3] = call('HGET', docs, mine) or ''
      out[o + 4] = call('HGET', verdicts, mine) or ''
    elseif fresh[id] then
      out[o + 1], out[o + 2] = unpack_seq(fresh[id]), -1
      out[o + 3], out[o + 4] = fresh_rec[id], ''
    elseif hashes and (all_fields[k] == '' or call('HGET', hashes, all_fields[k]) ~= id) then
      -- not in its buckets yet, or its id hash is no longer claimed by it: not registered
      out[o + 1], out[o + 2], out[o + 3], out[o + 4] = 0, -3, '', ''
    else
      local content, record, fields = contents[k], records[k], all_fields[k]
      seq = seq + 1
      local me = pack(seq)
      local first = ''
      local xkey, bk = xkeys[k], bkeys[k]
      if call('HSETNX', xkey, content, me) == 0 then
        local copies = call('HGET', xkey, content)
        first = first_live(times, copies, live_after, added)
        if #copies < copies_cap then call('HSET', xkey, content, copies .. me) end
      end
      local found, nf, hot = {}, 0, 0
      if hashes then fields = '' end
      for at = 1, #fields, 8 do
        local f = sub(fields, at, at + 7)
        local bkey = bk[(at + 7) / 8]
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
      fresh[id], fresh_rec[id], added[me] = me, record, true
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
  elseif args[9] == '1' then -- (HGET and HSET: no command beyond the worker's ACL)
    call('HSET', meta, 'touch', tonumber(call('HGET', meta, 'touch') or '0') + 1)
  end
  return out
end

local function register64k(keys, args)
  return register_articles(keys, args, nil)
end

-- register_home64: a sharded namespace's registration on its home slot (see Sharded below).
-- KEYS = the namespace's keys (as register64k), its id-hash map (nd:{ns}:h), then the distinct
-- content shard keys of the call's articles; ARGV as register64k, each article packed with one
-- 8-byte field, its id hash (claimed by claim64), once it is in its buckets (they live on other
-- slots), or none when the caller did not add it because it was registered or deleted. Registers
-- and probes as register64k does with no buckets (the deleted check, replays, the counter, the
-- content slot). Returns as register64k, with hot 0 and no bucket values; an article that would
-- be registered now but came without its id hash (expired since the caller looked), or whose id
-- hash the id-hash map does not name it the holder of, is not: 0, -3, '', '' (claim, add it to
-- its buckets, then again).
local function register_home64(keys, args)
  return register_articles(keys, args, keys[7])
end

-- probe64k (read only; was probe64: shard keys declared): KEYS as register64k;
-- ARGV = shard_bits, content hash, fields, live_after ('' = no retention).
-- Returns {first live copy's seq packed or '', all bucket values concatenated}
local function probe64k(keys, args)
  local call, sub = redis.call, string.sub
  local shard_key, xprefix, bprefix = shard_layout(keys, args[1])
  local shards = declared_shards(keys)
  local content, fields = args[2], args[3]
  local live_after = optional_number(args[4] or '', 'live_after')
  local copies = call('HGET', checked(shards, shard_key(xprefix, content)), content)
  local first = copies and first_live(keys[4], copies, live_after, {}) or ''
  local found = {}
  for at = 1, #fields, 8 do
    local f = sub(fields, at, at + 7)
    found[#found + 1] = call('HGET', checked(shards, shard_key(bprefix, f)), f) or ''
  end
  return {first, table.concat(found)}
end

-- check64k (read only): what a read-only check of one article needs, in one call. KEYS as
-- probe64k; ARGV = shard_bits, content hash, fields, live_after, article id.
-- Returns {its own packed seq or '', first live copy's seq packed or '', all bucket values
-- concatenated, the seqs read (packed, distinct, its own; else the first copy, then the bucket
-- values in order), their records and their verdicts (HMGET replies, in that order)}
local function check64k(keys, args)
  local call, sub = redis.call, string.sub
  local own = call('HGET', keys[2], args[5])
  local first, found, seqs = '', '', {}
  if own then
    seqs[1] = own
  else
    local probed = probe64k(keys, {args[1], args[2], args[3], args[4]})
    first, found = probed[1], probed[2]
    local seen = {}
    if first ~= '' then
      seen[first] = true
      seqs[1] = first
    end
    for at = 1, #found, SEQ_BYTES do
      local s = sub(found, at, at + SEQ_BYTES - 1)
      if not seen[s] then
        seen[s] = true
        seqs[#seqs + 1] = s
      end
    end
  end
  local records, verdicts = {}, {}
  for lo = 1, #seqs, 1000 do -- unpack() stays within Lua's stack whatever the bucket cap
    local part = {unpack(seqs, lo, math.min(lo + 999, #seqs))}
    for _, v in ipairs(call('HMGET', keys[3], unpack(part))) do records[#records + 1] = v end
    for _, v in ipairs(call('HMGET', keys[5], unpack(part))) do verdicts[#verdicts + 1] = v end
  end
  return {own or '', first, found, table.concat(seqs), records, verdicts}
end

-- where a run of 8-byte entries holds entry e, at an aligned offset (nil: it does not)
local function entry_at(v, e)
  local pos = 1
  while true do
    local s = string.find(v, e, pos, true)
    if not s then return nil end
    if (s - 1) % SEQ_BYTES == 0 then return s end
    pos = s + 1
  end
end

-- take one packed seq out of a hash field's run of seqs (8-byte aligned); drop emptied fields
local function take_out(key, f, me)
  local v = redis.call('HGET', key, f)
  local s = v and entry_at(v, me)
  if not s then return end
  if #v == SEQ_BYTES then
    redis.call('HDEL', key, f)
  else
    redis.call('HSET', key, f, string.sub(v, 1, s - 1) .. string.sub(v, s + SEQ_BYTES))
  end
end

-- remove64k (was remove64: shard keys declared, checked before any write): KEYS as register64k;
-- ARGV = shard_bits, then 4 per article: packed seq, id,
-- content hash, fields. Deletes each article everywhere, buckets included; one already gone is
-- skipped. Returns how many were there.
local function remove_articles(keys, args, hashes)
  local call, sub = redis.call, string.sub
  local ids, docs, times, verdicts = keys[2], keys[3], keys[4], keys[5]
  local shard_key, xprefix, bprefix = shard_layout(keys, args[1])
  local shards = declared_shards(keys, hashes and 8)
  for a = 2, #args, 4 do
    local content, fields = args[a + 2], hashes and '' or args[a + 3]
    checked(shards, shard_key(xprefix, content))
    for at = 1, #fields, 8 do checked(shards, shard_key(bprefix, sub(fields, at, at + 7))) end
  end
  local removed = 0
  for a = 2, #args, 4 do
    local me, id, content, fields = args[a], args[a + 1], args[a + 2], args[a + 3]
    if call('HEXISTS', docs, me) == 1 then
      if hashes then -- the id hashes it holds: released once its entries are gone
        for at = 1, #fields, 8 do
          local h = sub(fields, at, at + 7)
          if call('HGET', hashes, h) == id then call('HDEL', hashes, h) end
        end
        fields = ''
      end
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

local function remove64k(keys, args)
  return remove_articles(keys, args, nil)
end

-- remove_home64: a sharded namespace's removal on its home slot, after its bucket entries went
-- (shard_remove64). KEYS as register_home64; ARGV = shard_bits, then 4 per article: packed seq,
-- id, content hash, the id hashes it holds (packed, 8 bytes each). As remove64k without buckets,
-- and releases each of those hashes the id-hash map names this id the holder of (never another
-- id's).
local function remove_home64(keys, args)
  return remove_articles(keys, args, keys[7])
end

-- Sharded namespaces (stream/index/redis/sharded.py). A namespace of N > 1 shards keeps its
-- buckets in N other slots, nd:{ns/g}:b:<hex> for shard group g, and everything else on its
-- home slot {ns}. A bucket lists 8-byte id hashes, earliest first (an article has no seq when it
-- adds itself), each claimed by one id in the home slot's id-hash map (claim64) before any bucket
-- lists it. The three functions below run on one shard group's slot. KEYS = the group's
-- bucket shard keys a call touches; ARGV starts with shard_bits and the group's base
-- (nd:{ns/g}:), from which each key is derived and checked as declared, before any write.
-- Articles come packed: id hash (8 bytes), field count ('>H'), fields (8 bytes each).
-- each(key, field, id hash, k) is called for every field of the k-th article, in order, once
-- every key is checked.
local function group_articles(keys, args, each)
  local sub, unpack_head = string.sub, struct.unpack
  local shard_key, _, bprefix = shard_layout_at(args[2], args[1])
  local shards = declared_shards(keys, 1)
  local blob, todo, pos, k = args[#args], {}, 1, 0
  while pos <= #blob do
    local hash = sub(blob, pos, pos + 7)
    local nf, p = unpack_head('>H', blob, pos + 8)
    k = k + 1
    for at = p, p + 8 * nf - 1, 8 do
      local f = sub(blob, at, at + 7)
      todo[#todo + 1] = {checked(shards, shard_key(bprefix, f)), f, hash, k}
    end
    pos = p + 8 * nf
  end
  for _, t in ipairs(todo) do each(t[1], t[2], t[3], t[4]) end
end

-- claim64: KEYS = a sharded namespace's meta, ids, deleted, id-hash map (nd:{ns}:m, :i, :g, :h);
-- ARGV = the namespace's id-hash key (as the caller has it), then an article id and the 8-byte id
-- hash it asks for, per article. What a registration does before step 1: returns the key stored
-- in meta 'idkey' (set to the caller's if absent), then, only if it is the caller's, per article
-- 1 when the id is registered, 2 when it is remembered as deleted (a replay or a deleted id adds
-- nothing to the buckets), 0 when the id now holds the hash (claimed here, or before), or 3 when
-- another id holds it (ask for the id's next hash). One id a hash: a bucket entry is only ever
-- added by the id that holds it, so a reader's id hash -> id -> seq names the right article.
local function claim64(keys, args)
  local call = redis.call
  local stored = call('HGET', keys[1], 'idkey')
  if not stored then
    call('HSET', keys[1], 'idkey', args[1])
    stored = args[1]
  end
  local out = {stored}
  if stored ~= args[1] then return out end
  for a = 2, #args, 2 do
    local id, hash = args[a], args[a + 1]
    if #hash ~= 8 then error('claim64: an id hash is 8 bytes') end
    if call('HEXISTS', keys[2], id) == 1 then
      out[#out + 1] = 1
    elseif call('ZSCORE', keys[3], id) then
      out[#out + 1] = 2
    else
      local holder = call('HGET', keys[4], hash)
      if not holder then
        call('HSET', keys[4], hash, id)
        out[#out + 1] = 0
      elseif holder == id then
        out[#out + 1] = 0
      else
        out[#out + 1] = 3
      end
    end
  end
  return out
end

-- resolve64 (read only): KEYS = a sharded namespace's id-hash map, ids (nd:{ns}:h, :i); ARGV =
-- id hashes packed (8 bytes each). Returns, per hash, the packed seq of the id holding it, or ''
-- (no holder, or one without a seq). Step 4.
local function resolve64(keys, args)
  local call, sub, blob, out = redis.call, string.sub, args[1], {}
  for at = 1, #blob, 8 do
    local id = call('HGET', keys[1], sub(blob, at, at + 7))
    out[#out + 1] = id and call('HGET', keys[2], id) or ''
  end
  return out
end

-- shard_add64: ARGV = shard_bits, base, cap (entries), articles. Adds each article's id hash to
-- its buckets below the cap (once: a replay adds nothing). Step 1 of a sharded registration.
local function shard_add64(keys, args)
  local call, cap = redis.call, SEQ_BYTES * tonumber(args[3])
  local added = 0
  group_articles(keys, args, function(key, f, hash)
    if call('HSETNX', key, f, hash) == 1 then
      added = added + 1
      return
    end
    local v = call('HGET', key, f)
    if #v < cap and not entry_at(v, hash) then
      call('HSET', key, f, v .. hash)
      added = added + 1
    end
  end)
  return added
end

-- shard_read64 (read only): ARGV = shard_bits, base, cap (entries), articles. Returns two values
-- per article, in order: how many of its buckets here are full without it (hot), and the runs
-- of id hashes of its buckets here, concatenated. Step 3.
local function shard_read64(keys, args)
  local call, cap = redis.call, SEQ_BYTES * tonumber(args[3])
  local hot, runs = {}, {}
  group_articles(keys, args, function(key, f, hash, k)
    local v = call('HGET', key, f) or ''
    if not runs[k] then runs[k], hot[k] = {}, 0 end
    local r = runs[k]
    r[#r + 1] = v
    if #v >= cap and not entry_at(v, hash) then hot[k] = hot[k] + 1 end
  end)
  local out = {}
  for k = 1, #runs do
    out[2 * k - 1], out[2 * k] = hot[k], table.concat(runs[k])
  end
  return out
end

-- shard_remove64: ARGV = shard_bits, base, articles. Takes each id hash out of its buckets.
local function shard_remove64(keys, args)
  group_articles(keys, args, function(key, f, hash) take_out(key, f, hash) end)
  return 1
end

-- forget64: KEYS = the namespace's keys (as register64k without shard keys: it touches none);
-- ARGV = article id. Remembers the id as deleted, at Redis's own time (TIME), so no later registration of it succeeds; returns its packed seq, or '' if it is
-- not indexed. The caller then removes the article (remove64k): a registration that came before
-- this call is found here, one after it is refused.
local function forget64(keys, args)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
  redis.call('ZADD', keys[6], string.format('%.6f', now), args[1])
  return redis.call('HGET', keys[2], args[1]) or ''
end

-- scheme: KEYS = meta; ARGV = scheme bytes. Returns the stored scheme (set if absent).
local function scheme(keys, args)
  redis.call('HSETNX', keys[1], 'scheme', args[1])
  return redis.call('HGET', keys[1], 'scheme')
end

-- Boilerplate learning. KEYS = meta, lines a, lines b (nd:{ns}:m, :l:a, :l:b); a line key is
-- 16 bytes (source, line fingerprint: sketch/lines.py), passed packed in one string.
local LINE_KEY = 16

local function line_keys(blob)
  local out, sub = {}, string.sub
  for pos = 1, #blob, LINE_KEY do
    out[#out + 1] = sub(blob, pos, pos + LINE_KEY - 1)
  end
  return out
end

-- line_counts16: ARGV = packed line keys. Returns, per key, the documents counted in both
-- generations.
local function line_counts16(keys, args)
  local fields, out = line_keys(args[1]), {}
  for lo = 1, #fields, 1000 do
    local part = {unpack(fields, lo, math.min(lo + 999, #fields))}
    local a = redis.call('HMGET', keys[2], unpack(part))
    local b = redis.call('HMGET', keys[3], unpack(part))
    for i = 1, #part do
      out[#out + 1] = (tonumber(a[i]) or 0) + (tonumber(b[i]) or 0)
    end
  end
  return out
end

-- add_lines16: ARGV = cap, packed line keys (a key once per document that has the line). Counts
-- them in the current generation; once it holds more than cap keys it becomes the previous one
-- and the one before is dropped, so at most two generations of cap keys are kept and a line seen
-- in every few documents (boilerplate) keeps its count across the switch.
local function count_lines(meta, lines_a, lines_b, cap, blob)
  local cur = redis.call('HGET', meta, 'lines') or 'a'
  local this, other = lines_a, lines_b
  if cur == 'b' then this, other = lines_b, lines_a end
  for _, f in ipairs(line_keys(blob)) do
    redis.call('HINCRBY', this, f, 1)
  end
  if redis.call('HLEN', this) > cap then
    redis.call('DEL', other)
    redis.call('HSET', meta, 'lines', cur == 'a' and 'b' or 'a')
  end
  return redis.call('HLEN', this)
end

local function add_lines16(keys, args)
  return count_lines(keys[1], keys[2], keys[3], tonumber(args[1]), args[2])
end

-- put_verdicts64 (was neardup_put_verdicts_packed): KEYS = ids, verdicts[, meta, lines a, lines b];
-- ARGV = verdicts packed in one string, each as packed seq (8 bytes), id length ('>H'), id,
-- verdict length ('>I4'), verdict[; cap, packed line keys]. Writes a verdict only while its seq
-- still belongs to that article id (a seq deleted, or reused after a failover lost writes, keeps
-- no verdict of another article). With lines, counts them in the same step (see add_lines16):
-- a batch's lines are counted iff its verdicts are stored. Returns how many verdicts were written.
local function put_verdicts64(keys, args)
  local blob, sub, unpack_len = args[1], string.sub, struct.unpack
  local n, pos = 0, 1
  while pos <= #blob do
    local me = sub(blob, pos, pos + SEQ_BYTES - 1)
    local id_len, p = unpack_len('>H', blob, pos + SEQ_BYTES)
    local id = sub(blob, p, p + id_len - 1)
    local len, q = unpack_len('>I4', blob, p + id_len)
    if redis.call('HGET', keys[1], id) == me then
      redis.call('HSET', keys[2], me, sub(blob, q, q + len - 1))
      n = n + 1
    end
    pos = q + len
  end
  if keys[5] then count_lines(keys[3], keys[4], keys[5], tonumber(args[2]), args[3]) end
  return n
end

redis.register_function('neardup_put_verdicts64', put_verdicts64)
redis.register_function{
  function_name='neardup_line_counts16', callback=line_counts16, flags={'no-writes'}
}
redis.register_function('neardup_add_lines16', add_lines16)
redis.register_function('neardup_register64k', register64k)
redis.register_function{function_name='neardup_probe64k', callback=probe64k, flags={'no-writes'}}
redis.register_function{function_name='neardup_check64k', callback=check64k, flags={'no-writes'}}
redis.register_function('neardup_remove64k', remove64k)
redis.register_function('neardup_register_home64', register_home64)
redis.register_function('neardup_remove_home64', remove_home64)
redis.register_function('neardup_shard_add64', shard_add64)
redis.register_function{
  function_name='neardup_shard_read64', callback=shard_read64, flags={'no-writes'}
}
redis.register_function('neardup_shard_remove64', shard_remove64)
redis.register_function('neardup_claim64', claim64)
redis.register_function{
  function_name='neardup_resolve64', callback=resolve64, flags={'no-writes'}
}
redis.register_function('neardup_forget64', forget64)
redis.register_function('neardup_scheme', scheme)
