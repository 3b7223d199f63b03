"""neardup.stream.index.redis.index.packed_command: the Redis protocol bytes of a command, as
redis-py packs them (its own packer, on a connection that is never opened)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from redis.asyncio.connection import Connection

from neardup.stream.index.redis.wire import packed_command

_ARG = st.one_of(
    st.text(max_size=40),
    st.binary(max_size=40),
    st.integers(-(2**63), 2**64),
    st.binary(min_size=7000, max_size=9000),  # past redis-py's buffer cutoff: sent apart
)


@given(st.sampled_from(["FCALL", "FCALL_RO", "HSET"]), st.lists(_ARG, max_size=60))
def test_packed_as_redis_py_packs(name: str, args: list[str | bytes | int]) -> None:
    want = b"".join(Connection().pack_command(name, *args))
    assert packed_command([name, *args]) == want


def test_a_registration_call_packs_as_redis_py_packs() -> None:
    keys = [f"nd:{{news}}:b:{s:x}" for s in range(3000)]
    call = ["FCALL", "neardup_register64k", len(keys), *keys, 16, 64, 8, 2, b"\x00\x01" * 500]
    assert packed_command(call) == b"".join(Connection().pack_command(*call))
