"""Colliding inputs of MurmurHash3 x64 128 (``mmh3.hash_bytes``), whatever the seed: the public
differential on its block mixing, written here from the algorithm's definition.

A 16-byte block (k1, k2) is mixed into the state (h1, h2) as
``h1 ^= K1; h1 = rotl(h1, 27) + h2; h1 = 5 h1 + c`` and
``h2 ^= K2; h2 = rotl(h2, 31) + h1; h2 = 5 h2 + c'``, where ``K1 = mix1(k1)`` and
``K2 = mix2(k2)`` are bijections of the words (odd multipliers, a rotation), so any K is reached.
A difference in the top bit alone passes through additions and the multiplication by 5
unchanged (carries fall off the end). So, against the same block:

- block 1 with ``K1 ^ 2**36`` and ``K2 ^ 2**32``: h1 differs in its top bit after the rotation
  by 27; h2's rotated difference (top bit) and h1's (top bit) cancel in ``h2 += h1``;
- block 2 with ``K1 ^ 2**63``: h1's top bit difference cancels at once; the states are equal.

The state is then the same, so anything after (a shared suffix, the length) hashes alike, and so
does anything before (a shared prefix of whole blocks gives another starting state, and the
differential works from any state: the seed does not matter). The words are searched until both
inputs are printable UTF-8, 8 bytes a word (a few thousand tries a word, well under a second). Not
ASCII alone: the other word of a pair is the first plus a nearly fixed constant whose high bytes
are about 0x80 for the third word, out of ASCII for any printable first word."""

from __future__ import annotations

import random
from collections.abc import Callable

M64 = (1 << 64) - 1
C1, C2 = 0x87C37B91114253D5, 0x4CF5AD432745937F


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & M64


def mix1(k: int) -> int:
    return _rotl(k * C1 & M64, 31) * C2 & M64


def mix2(k: int) -> int:
    return _rotl(k * C2 & M64, 33) * C1 & M64


def unmix1(m: int) -> int:
    return _rotl(m * pow(C2, -1, 1 << 64) & M64, 64 - 31) * pow(C1, -1, 1 << 64) & M64


def unmix2(m: int) -> int:
    return _rotl(m * pow(C1, -1, 1 << 64) & M64, 64 - 33) * pow(C2, -1, 1 << 64) & M64


def printable_word(rng: random.Random) -> bytes:
    """8 bytes of printable UTF-8: ASCII, two- and three-byte characters."""
    out = b""
    while len(out) < 8:
        room, r = 8 - len(out), rng.random()
        if r < 0.4 or room == 1:
            c = chr(rng.randint(0x21, 0x7E))
        elif r < 0.7 or room == 2:
            c = chr(rng.randint(0xA1, 0x7FF))
        else:
            c = chr(rng.randint(0x800, 0xD7FF))
        if len(c.encode()) <= room and c.isprintable():
            out += c.encode()
    return out


def _printable(word: bytes) -> bool:
    try:
        return word.decode("utf-8").isprintable()
    except UnicodeDecodeError:
        return False


def _word_pair(
    rng: random.Random, mix: Callable[[int], int], unmix: Callable[[int], int], diff: int
) -> tuple[bytes, bytes]:
    """Two printable 8-byte words whose mixed values differ by ``diff`` (XOR)."""
    while True:
        a = printable_word(rng)
        b = unmix(mix(int.from_bytes(a, "little")) ^ diff).to_bytes(8, "little")
        if _printable(b):
            return a, b


def colliding_blocks(rng: random.Random) -> tuple[bytes, bytes]:
    """Two different printable UTF-8 32-byte strings of one MurmurHash3 x64 128 state change."""
    k1, k1x = _word_pair(rng, mix1, unmix1, 1 << 36)
    k2, k2x = _word_pair(rng, mix2, unmix2, 1 << 32)
    k3, k3x = _word_pair(rng, mix1, unmix1, 1 << 63)
    k4 = printable_word(rng)
    return k1 + k2 + k3 + k4, k1x + k2x + k3x + k4


def colliding_ids(rng: random.Random, prefix: str = "", suffix: str = "") -> tuple[str, str]:
    """Two printable UTF-8 ids that collide on all 128 bits of MurmurHash3 x64 128 at every
    seed: ``prefix`` (padded with ``_`` to whole 16-byte blocks), the colliding blocks, then
    ``suffix``."""
    head = prefix.encode("utf-8")
    head += b"_" * (-len(head) % 16)
    a, b = colliding_blocks(rng)
    return (head + a).decode() + suffix, (head + b).decode() + suffix


__all__ = [
    "colliding_blocks",
    "colliding_ids",
    "mix1",
    "mix2",
    "printable_word",
    "unmix1",
    "unmix2",
]
