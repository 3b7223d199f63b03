"""Disguised copies on a real Redis: each disguise of the canonical form's families is found with
the exact verdict the memory store gives, and a namespace indexed under the form before it is
refused with both forms named."""

from __future__ import annotations

from collections.abc import Callable

import orjson
import pytest
from redis.asyncio import Redis

from harness import data
from neardup.sketch.canonical import CANONICAL_FORM, LEGACY_FORM
from neardup.stream.engine.engine import Engine
from neardup.stream.errors import NeardupError, SchemeMismatchError
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.index.redis.index import RedisIndex
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces.policy import Policy

_LOOKALIKE = str.maketrans("aeopcxy", "аеорсху")  # Cyrillic


def _in_words(mark: str) -> Callable[[str], str]:
    return lambda t: " ".join(mark.join(w) if len(w) > 3 else w for w in t.split(" "))


DISGUISES: dict[str, Callable[[str], str]] = {
    "zero width space": _in_words("\u200b"),
    "zero width joiner": _in_words("\u200d"),
    "soft hyphen": _in_words("\u00ad"),
    "word joiner": _in_words("\u2060"),
    "cyrillic look-alikes": lambda t: t.translate(_LOOKALIKE),
    "greek look-alikes": lambda t: t.replace("o", "\u03bf").replace("i", "\u03b9"),
    "combining marks": lambda t: "".join(c + "\u0301" if c in "aeiou" else c for c in t),
    "html entities": lambda t: t.replace("e", "&#101;").replace("a", "&#x61;"),
    "html page": lambda t: (
        "<!DOCTYPE html><html><head><title>x</title></head><body>"
        + "".join(f"<p>{p}</p>" for p in t.split("\n"))
        + "</body></html>"
    ),
    "full width": lambda t: "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in t),
}


async def _decide(engine: Engine, articles: list[Article]) -> dict[str, Verdict]:
    out = {}
    for v in await engine.process(articles):
        assert not isinstance(v, NeardupError), v
        out[v.id] = v
    return out


def _stream(ns: str) -> list[Article]:
    stories = [r["text"] for r in data.reuters() if len(r["text"].split()) > 150][20:30]
    originals = [Article(f"o{i}", t, ns) for i, t in enumerate(stories)]
    copies = [
        Article(f"c{i}-{name}", disguise(stories[i % len(stories)]), ns)
        for i, (name, disguise) in enumerate(DISGUISES.items())
    ]
    return originals + copies


async def test_every_disguise_is_found_on_redis_as_in_memory(redis_client: Redis) -> None:
    want = await _decide(Engine(MemoryIndex()), _stream("disguised"))
    got = await _decide(Engine(RedisIndex(redis_client)), _stream("disguised"))
    assert got == want
    for i, name in enumerate(DISGUISES):
        v = got[f"c{i}-{name}"]
        assert (v.verdict, v.duplicate_of) == ("duplicate", f"o{i % 10}"), name
    assert all(got[f"o{i}"].verdict == "original" for i in range(10))


async def test_a_namespace_of_the_form_before_is_refused_on_redis(redis_client: Redis) -> None:
    index = RedisIndex(redis_client)
    scheme = Policy().scheme()
    del scheme["canonical"]  # how a namespace indexed before the form had a name reads
    await index.ensure_scheme("old", orjson.dumps(scheme, option=orjson.OPT_SORT_KEYS))
    (refused,) = await Engine(index).process([Article("a", "some text to check here", "old")])
    assert isinstance(refused, SchemeMismatchError)
    assert LEGACY_FORM in str(refused) and CANONICAL_FORM in str(refused)
    assert refused.reason == "scheme_mismatch"


@pytest.mark.parametrize("name", sorted(DISGUISES))
def test_each_disguise_changes_the_text(name: str) -> None:
    story = _stream("x")[0].text
    assert DISGUISES[name](story) != story
