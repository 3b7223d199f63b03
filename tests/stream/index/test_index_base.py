"""The index contract's helpers: the storage format read back from a stored scheme, the refusal
message of an old format, and one window per buffered registration."""

from __future__ import annotations

import pytest

from neardup.stream.index.base import (
    BufferedRegistration,
    Registration,
    Window,
    scheme_format,
    scheme_mismatch,
)
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.namespaces.policy import SCHEME_FORMAT, Policy


def test_scheme_format_reads_the_stored_scheme() -> None:
    mine = Policy().scheme_bytes()
    assert scheme_format(mine) == SCHEME_FORMAT == 7
    assert scheme_format(mine + b"|shard_bits=16") == 7
    assert scheme_format(b"not json|shard_bits=16") is None
    assert scheme_format(b"[1, 2]") is None


def test_an_old_format_is_refused_with_what_to_do() -> None:
    old = Policy().scheme_bytes().replace(b'"format":7', b'"format":6')
    message = str(scheme_mismatch("news", old, Policy().scheme_bytes()))
    assert "format 6" in message and "format 7" in message
    assert "new namespace" in message and "nd:{news}:*" in message
    other = str(
        scheme_mismatch("news", Policy(num_perm=64).scheme_bytes(), Policy().scheme_bytes())
    )
    assert "different sketch scheme" in other


async def test_a_buffered_registration_has_one_window() -> None:
    reg = Registration("a", bytes(16), (), b"", 0.0)
    buffered = BufferedRegistration(MemoryIndex(), "ns", 8)
    await buffered.send([reg], Window(live_after=1.0))
    with pytest.raises(ValueError, match="one window"):
        await buffered.send([reg], Window(live_after=2.0))
