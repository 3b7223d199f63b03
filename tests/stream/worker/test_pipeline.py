"""The worker's batch policy, no broker: dead letters, conflicts, retries while Redis is away."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from neardup.stream.engine.engine import Engine
from neardup.stream.errors import IndexUnavailableError
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.names import NAMESPACE_RE
from neardup.stream.worker.messages import Incoming, split_verdict_key, verdict_key
from neardup.stream.worker.metrics import Metrics
from neardup.stream.worker.pipeline import BatchHandler

TEXT = "the committee approved the new budget for public schools after a long debate " * 3


def msg(
    value: bytes | None,
    offset: int,
    key: bytes | None = b"k",
    headers: tuple[tuple[str, bytes | None], ...] = (),
) -> Incoming:
    return Incoming(value, key, "articles", 3, offset, headers)


def art(doc_id: str, offset: int, text: str = TEXT, **extra: str) -> Incoming:
    return msg(orjson.dumps({"id": doc_id, "text": text, **extra}), offset, doc_id.encode())


async def test_bad_messages_become_dead_letters_and_good_ones_verdicts() -> None:
    handler = BatchHandler(Engine(MemoryIndex()), Metrics(), max_message_bytes=2000)
    batch = [
        msg(b"{oops", 10),
        msg(orjson.dumps({"id": "a", "text": TEXT}), 11),
        msg(None, 12, key=None),
        msg(orjson.dumps({"id": "big", "text": "x" * 3000}), 13),
        msg(b'{"id": "u", "text": "\xff"}', 14),
        msg(orjson.dumps({"id": "b", "text": TEXT}), 15),
        msg(orjson.dumps({"id": "a", "text": "a different text under the same id " * 5}), 16),
    ]
    verdicts, dead = await handler.handle(batch)
    assert [orjson.loads(v.value or b"")["id"] for v in verdicts] == ["a", "b"]
    assert [v.key for v in verdicts] == [b"a", b"b"]
    assert orjson.loads(verdicts[1].value or b"")["verdict"] == "duplicate"
    reasons = [
        (orjson.loads(d.value)["reason"], orjson.loads(d.value)["source"]["offset"]) for d in dead
    ]
    assert reasons == [
        ("invalid_json", 10),
        ("empty_message", 12),
        ("oversize", 13),
        ("invalid_utf8", 14),
        ("conflict", 16),
    ]
    bad_utf8 = orjson.loads(dead[3].value)
    assert bad_utf8["value"] is None and bad_utf8["value_base64"]
    text = handler.metrics.render().decode()
    assert 'neardup_dead_letters_total{reason="conflict"} 1.0' in text
    assert "neardup_articles_in_total 7.0" in text


class FlakyIndex(MemoryIndex):
    """A real MemoryIndex whose first ``failures`` registrations find the store away."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    async def register(self, ns, regs, cap, **window):  # type: ignore[no-untyped-def]
        if self.failures:
            self.failures -= 1
            raise IndexUnavailableError("connection refused")
        return await super().register(ns, regs, cap, **window)


async def test_index_away_pauses_and_retries_instead_of_dead_lettering() -> None:
    states: list[str | None] = []
    handler = BatchHandler(
        Engine(FlakyIndex(failures=3)),
        Metrics(),
        backoff_max_s=0.01,
        on_unavailable=states.append,
    )
    verdicts, dead = await handler.handle([msg(orjson.dumps({"id": "a", "text": TEXT}), 1)])
    assert len(verdicts) == 1 and dead == []
    assert states[:3] == ["index unavailable: connection refused"] * 3 and states[3:] == [None]
    assert "neardup_index_retries_total 3.0" in handler.metrics.render().decode()


async def test_stopping_worker_gives_up_retrying() -> None:
    handler = BatchHandler(Engine(FlakyIndex(failures=100)), Metrics(), should_stop=lambda: True)
    with pytest.raises(IndexUnavailableError):
        await handler.handle([msg(orjson.dumps({"id": "a", "text": TEXT}), 1)])


async def test_a_tombstone_deletes_and_is_answered_by_a_verdict_tombstone() -> None:
    index = MemoryIndex()
    handler = BatchHandler(Engine(index), Metrics())
    await handler.handle([art("a", 1), art("n", 2, namespace="news")])
    verdicts, dead = await handler.handle(
        [
            msg(None, 3, b"a"),
            msg(None, 4, b"n", headers=(("namespace", b"news"),)),
            msg(None, 5, b"never-seen"),  # unknown: still answered, deleting is idempotent
        ]
    )
    assert dead == []
    assert [(v.key, v.value) for v in verdicts] == [
        (b"a", None),
        (b"news\x1fn", None),  # not the worker's namespace: keyed with its namespace
        (b"never-seen", None),
    ]
    assert await index.count("default") == 0 and await index.count("news") == 0
    text = handler.metrics.render().decode()
    assert 'neardup_deletes_total{result="found"} 2.0' in text
    assert 'neardup_deletes_total{result="unknown"} 1.0' in text


async def test_order_within_a_batch_decides_what_a_tombstone_deletes() -> None:
    index = MemoryIndex()
    handler = BatchHandler(Engine(index), Metrics())
    verdicts, dead = await handler.handle(
        [art("a", 1), msg(None, 2, b"a"), msg(None, 3, b"b"), art("b", 4), art("c", 5)]
    )
    assert dead == []
    # "a" got its verdict and then the tombstone; "b" came after its own tombstone: a deleted id
    # is remembered, so it is skipped (a replay must not bring a takedown back); "c" is decided
    # after the delete of "a", so it is an original, not a copy of "a".
    assert [(v.key, v.value is None) for v in verdicts] == [
        (b"a", False),
        (b"a", True),
        (b"b", True),
        (b"c", False),
    ]
    assert orjson.loads(verdicts[3].value or b"")["verdict"] == "original"
    assert await index.seq_of("default", "a") is None
    assert 'neardup_skipped_total{reason="deleted"} 1.0' in handler.metrics.render().decode()


async def test_a_replay_of_a_deleted_article_publishes_nothing_and_is_no_dead_letter() -> None:
    handler = BatchHandler(Engine(MemoryIndex()), Metrics())
    await handler.handle([art("a", 1)])
    await handler.handle([msg(None, 2, b"a")])
    verdicts, dead = await handler.handle([art("a", 1), art("z", 3, "unrelated words " * 20)])
    assert [v.key for v in verdicts] == [b"z"] and dead == []
    assert 'neardup_skipped_total{reason="deleted"} 1.0' in handler.metrics.render().decode()


@pytest.mark.parametrize(
    ("key", "headers", "reason"),
    [
        (None, (), "empty_message"),
        (b"", (), "empty_message"),
        (b"\xff\xfe", (), "invalid_id"),
        (b"a\x00b", (), "invalid_id"),
        (b"x" * 600, (), "invalid_id"),
        (b"a", (("namespace", b"{evil}"),), "invalid_namespace"),
        (b"a", (("namespace", b"\xff"),), "invalid_namespace"),
    ],
)
async def test_bad_tombstones_are_dead_letters(
    key: bytes | None, headers: tuple[tuple[str, bytes], ...], reason: str
) -> None:
    handler = BatchHandler(Engine(MemoryIndex()), Metrics())
    verdicts, dead = await handler.handle([msg(None, 9, key, headers), art("a", 10)])
    assert [v.key for v in verdicts] == [b"a"]
    assert [orjson.loads(d.value or b"")["reason"] for d in dead] == [reason]


async def test_a_transient_error_while_deleting_is_retried() -> None:
    class FlakyDelete(MemoryIndex):
        failures = 2

        async def delete(self, ns: str, doc_id: str) -> bool:
            if self.failures:
                self.failures -= 1
                raise IndexUnavailableError("OOM command not allowed")
            return await super().delete(ns, doc_id)

    handler = BatchHandler(Engine(FlakyDelete()), Metrics(), backoff_max_s=0.01)
    verdicts, dead = await handler.handle([msg(None, 1, b"a")])
    assert [(v.key, v.value) for v in verdicts] == [(b"a", None)] and dead == []
    assert "neardup_index_retries_total 2.0" in handler.metrics.render().decode()


ids = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12).filter(str.isprintable)
namespaces = st.from_regex(NAMESPACE_RE, fullmatch=True)


@given(st.tuples(namespaces, ids), st.tuples(namespaces, ids), st.data())
def test_verdict_keys_of_two_articles_differ_unless_they_are_one_article(
    one: tuple[str, str], other: tuple[str, str], data: st.DataObject
) -> None:
    """A compacted verdict topic keeps one record a key: distinct (namespace, id) pairs must
    never share one, whichever namespace the worker calls its own (often one of the two, so the
    plain-id form meets the prefixed one), and every key reads back to its article."""
    home = data.draw(st.sampled_from([one[0], other[0]]) | namespaces)
    same = verdict_key(*one, home) == verdict_key(*other, home)
    assert same == (one == other)
    for ns, doc_id in (one, other):
        assert split_verdict_key(verdict_key(ns, doc_id, home)) == (
            None if ns == home else ns,
            doc_id,
        )


def test_the_home_namespace_keys_by_the_id_alone() -> None:
    assert verdict_key("news", "a/1", "news") == b"a/1"
    assert verdict_key("blog", "a/1", "news") == b"blog\x1fa/1"


async def test_one_id_in_two_namespaces_has_two_verdict_keys_each_naming_its_namespace() -> None:
    engine = Engine(MemoryIndex())
    handler = BatchHandler(engine, Metrics(), default_namespace="news")
    text = "the harbour board met on tuesday and voted to widen the north channel by spring"
    batch = [
        msg(orjson.dumps({"id": "7", "namespace": ns, "text": text}), n, b"7")
        for n, ns in enumerate(["news", "blog"])
    ]
    out, dead = await handler.handle(batch)
    assert dead == []
    assert [(o.key, o.headers()) for o in out] == [
        (b"7", [("namespace", b"news")]),
        (b"blog\x1f7", [("namespace", b"blog")]),
    ]
    (stone,), _ = await handler.handle([msg(None, 2, b"7", (("namespace", b"blog"),))])
    assert (stone.key, stone.value) == (b"blog\x1f7", None)
