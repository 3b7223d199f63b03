"""A sharded namespace's id hashes: the public MurmurHash3 collision the old (unkeyed) id hash
fell to is real, and the keyed hash does not fall to it; the scheme names the sharded format
and an old sharded namespace is refused with both formats named."""

from __future__ import annotations

import random
import timeit

import mmh3
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from neardup.stream.errors import SchemeMismatchError
from neardup.stream.index.base import scheme_mismatch, sharded_format
from neardup.stream.index.redis import keys
from neardup.stream.namespaces.policy import SHARDED_FORMAT, Policy
from tests.stream.index.redis.murmur3_collisions import colliding_ids, mix1, mix2, unmix1, unmix2

OLD_SEED = 0x696468  # the seed of the unkeyed id hash (sharded format 1)


@given(st.integers(0, 2**64 - 1))
def test_the_word_mixes_are_bijections(k: int) -> None:
    assert unmix1(mix1(k)) == k and unmix2(mix2(k)) == k


@pytest.mark.parametrize("seed", range(5))
def test_constructed_ids_collide_on_all_128_bits_of_murmurhash3_at_any_seed(seed: int) -> None:
    rng = random.Random(seed)
    a, b = colliding_ids(rng, prefix="wire/2026/", suffix="-v1")
    assert a != b and a.isprintable() and b.isprintable() and a.startswith("wire/2026/")
    for mm_seed in (OLD_SEED, 0, 0x636C75, rng.getrandbits(32)):
        assert mmh3.hash_bytes(a.encode(), mm_seed) == mmh3.hash_bytes(b.encode(), mm_seed)
    key = keys.new_id_key()
    assert keys.id_hash(a, key) != keys.id_hash(b, key)  # the keyed hash: no collision


def test_an_id_hash_depends_on_the_key_and_the_attempt() -> None:
    k1, k2 = keys.new_id_key(), keys.new_id_key()
    assert len(k1) == keys.ID_KEY_BYTES and k1 != k2
    assert keys.id_hash("r1", k1) == keys.id_hash("r1", k1)
    assert keys.id_hash("r1", k1) != keys.id_hash("r1", k2)
    tries = keys.id_hashes("r1", k1)
    assert len(set(tries)) == keys.ID_HASH_TRIES and tries[0] == keys.id_hash("r1", k1)
    assert all(len(h) == keys.ID_HASH_BYTES for h in tries)


def test_only_a_sharded_scheme_names_the_sharded_format() -> None:
    assert "sharded_format" not in Policy().scheme()  # the single-slot layout: unchanged
    sharded = Policy(shards=4).scheme_bytes()
    assert orjson.loads(sharded)["sharded_format"] == SHARDED_FORMAT == 2
    assert sharded_format(sharded) == 2 and sharded_format(Policy().scheme_bytes()) is None


def test_an_old_sharded_namespace_is_refused_with_both_formats_named() -> None:
    mine = Policy(shards=4).scheme_bytes()
    old = orjson.loads(mine)
    del old["sharded_format"]  # what a worker of sharded format 1 wrote
    err = scheme_mismatch("wide", orjson.dumps(old, option=orjson.OPT_SORT_KEYS), mine)
    assert isinstance(err, SchemeMismatchError)
    text = str(err)
    assert "sharded storage format 1" in text and "sharded format 2" in text
    assert "MurmurHash3" in text and "neardup reindex wide" in text


def test_keyed_hash_cost_next_to_murmurhash3() -> None:
    """Not a bound: the client CPU of 100,000 id hashes, printed (the test asserts only that the
    keyed hash stays within 10x of MurmurHash3, whose C call is the floor)."""
    ids = [f"reuters-{i:07d}" for i in range(100_000)]
    key = keys.new_id_key()
    mm = min(
        timeit.repeat(
            lambda: [mmh3.hash_bytes(i.encode(), OLD_SEED)[:8] for i in ids], number=1, repeat=3
        )
    )
    keyed = min(timeit.repeat(lambda: [keys.id_hash(i, key) for i in ids], number=1, repeat=3))
    print(
        f"100k ids: mmh3 {mm * 1e3:.1f} ms, keyed BLAKE2b {keyed * 1e3:.1f} ms ({keyed / mm:.2f}x)"
    )
    assert keyed < 10 * mm
