"""The fault checker's judge on hand-made histories: a clean run passes, and each invariant
fails on a history that breaks it (and only that invariant does)."""

from __future__ import annotations

import copy
from collections.abc import Callable

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.chaos_check import (
    INVARIANTS,
    Exit,
    History,
    IndexDump,
    OffsetCheck,
    Out,
    Poison,
    StoredRecord,
    check,
)

NS = "ns"
C1, C2, C3 = b"\x01" * 16, b"\x02" * 16, b"\x03" * 16


def verdict(ident: str, seq: int, kind: str = "original", of: str | None = None) -> bytes:
    return orjson.dumps(
        {"id": ident, "namespace": NS, "verdict": kind, "duplicate_of": of,
         "cluster": of or ident, "seq": seq}
    )  # fmt: skip


def dead(key: bytes, reason: str, value: str | None = "x") -> bytes:
    return orjson.dumps(
        {"reason": reason, "key": key.decode("utf-8", "replace"), "value": value,
         "value_bytes": len(value or "")}
    )  # fmt: skip


def clean() -> History:
    """a1 <- a2 one group, d1 registered then deleted, one poison message dead-lettered."""
    outputs = [
        Out("verdicts", 0, 0, b"a1", verdict("a1", 1)),
        Out("verdicts", 1, 0, b"a2", verdict("a2", 2, "near_duplicate", "a1")),
        Out("verdicts", 0, 1, b"a1", verdict("a1", 1)),  # an at-least-once repeat
        Out("verdicts", 2, 0, b"d1", verdict("d1", 3)),
        Out("verdicts", 2, 1, b"d1", None),
        Out("dlq", 0, 0, b"poison-1:", dead(b"poison-1:", "invalid_json")),
    ]
    index = IndexDump(
        seq_bytes=8,
        counter=3,
        ids={"a1": 1, "a2": 2},
        records={1: StoredRecord("a1", C1, (10, 11)), 2: StoredRecord("a2", C2, (10, 12))},
        buckets={10: [1, 2], 11: [1], 12: [2]},
        slots={C1: [1], C2: [2]},
        times={1, 2},
        verdicts={1, 2},
        bucket_cap=4,
        copies_cap=4,
    )
    return History(
        articles={"a1": NS, "a2": NS, "d1": NS},
        groups=[["a1", "a2"]],
        deleted={"d1"},
        poison=[Poison("not_json#1", b"poison-1:", frozenset({"invalid_json"}))],
        outputs=outputs,
        index={NS: index},
        exits=[Exit("w0", -9, killed=True, stopped=False), Exit("w1", 0, False, stopped=True)],
    )


def broken(change: Callable[[History], None]) -> set[str]:
    h = copy.deepcopy(clean())
    change(h)
    return {v.invariant for v in check(h)}


def test_a_clean_history_passes() -> None:
    assert check(clean()) == []


def _lost(h: History) -> None:
    h.outputs = [o for o in h.outputs if o.key != b"a2"]


def _differs(h: History) -> None:
    h.outputs.append(Out("verdicts", 0, 2, b"a1", verdict("a1", 7)))


def _two_originals(h: History) -> None:
    h.outputs[1] = Out("verdicts", 1, 0, b"a2", verdict("a2", 2))


def _no_original(h: History) -> None:
    h.outputs = [o for o in h.outputs if o.key != b"a1"]
    h.outputs.append(Out("verdicts", 0, 5, b"a1", verdict("a1", 1, "near_duplicate", "a2")))


def _tombstone_unanswered(h: History) -> None:
    h.outputs = [o for o in h.outputs if not (o.key == b"d1" and o.value is None)]


def _takedown_came_back(h: History) -> None:
    h.outputs.append(Out("verdicts", 2, 2, b"d1", verdict("d1", 3)))


def _deleted_still_indexed(h: History) -> None:
    d = h.index[NS]
    d.records[3], d.ids["d1"] = StoredRecord("d1", C3, (11,)), 3
    d.buckets[11].append(3)
    d.slots[C3] = [3]
    d.times.add(3)


def _poison_missing(h: History) -> None:
    h.outputs = [o for o in h.outputs if o.topic != "dlq"]


def _poison_wrong_reason(h: History) -> None:
    h.outputs[-1] = Out("dlq", 0, 0, b"poison-1:", dead(b"poison-1:", "oversize"))


def _valid_dead_lettered(h: History) -> None:
    h.outputs.append(Out("dlq", 1, 1, b"a2", dead(b"a2", "internal_error")))


def _tombstone_dead_lettered(h: History) -> None:
    h.outputs.append(Out("dlq", 2, 1, b"d1", dead(b"d1", "empty_message", None)))


def _unknown_dead_letter(h: History) -> None:
    h.outputs.append(Out("dlq", 3, 0, b"who", dead(b"who", "invalid_json")))


def _bucket_without_record(h: History) -> None:
    h.index[NS].buckets[12].append(9)


def _record_without_bucket(h: History) -> None:
    h.index[NS].buckets[12] = []


def _bucket_of_another(h: History) -> None:
    h.index[NS].buckets[11].append(2)


def _slot_of_another_text(h: History) -> None:
    h.index[NS].slots[C1].append(2)


def _record_without_slot(h: History) -> None:
    del h.index[NS].slots[C2]


def _id_index_disagrees(h: History) -> None:
    h.index[NS].ids["a2"] = 1


def _seq_width(h: History) -> None:
    h.index[NS].problems.append("bucket 0a: 12 bytes is not a run of 8-byte seqs")


def _stranger_indexed(h: History) -> None:
    d = h.index[NS]
    d.counter, d.records[4], d.ids["poison-5"] = 4, StoredRecord("poison-5", C3, ()), 4
    d.slots[C3] = [4]
    d.times.add(4)


def _offsets_went_back(h: History) -> None:
    h.offsets.append(OffsetCheck(9.5, {0: 12, 1: 7}, {0: 12, 1: 3}))


def _offsets_unreadable(h: History) -> None:
    h.offsets.append(OffsetCheck(9.5, {0: 12}, {}, "committed offsets not readable"))


def _log_reused_an_offset(h: History) -> None:
    h.outputs.append(Out("verdicts", 0, 0, b"a2", verdict("a2", 2, "near_duplicate", "a1")))


def _crashed(h: History) -> None:
    h.exits.append(Exit("w2", 70, killed=False, stopped=False, log_tail="SchemeMismatchError"))


def _never_settled(h: History) -> None:
    h.quiesced = False
    h.quiesce_note = "crash loop"


CASES: list[tuple[str, Callable[[History], None]]] = [
    ("verdicts", _lost),
    ("repeats", _differs),
    ("originals", _two_originals),
    ("originals", _no_original),
    ("deleted", _tombstone_unanswered),
    ("deleted", _takedown_came_back),
    ("deleted", _deleted_still_indexed),
    ("dlq", _poison_missing),
    ("dlq", _poison_wrong_reason),
    ("dlq", _valid_dead_lettered),
    ("dlq", _tombstone_dead_lettered),
    ("dlq", _unknown_dead_letter),
    ("index", _bucket_without_record),
    ("index", _record_without_bucket),
    ("index", _bucket_of_another),
    ("index", _slot_of_another_text),
    ("index", _record_without_slot),
    ("index", _id_index_disagrees),
    ("index", _seq_width),
    ("index", _stranger_indexed),
    ("offsets", _offsets_went_back),
    ("offsets", _offsets_unreadable),
    ("offsets", _log_reused_an_offset),
    ("workers", _crashed),
    ("quiesce", _never_settled),
]


@pytest.mark.parametrize(("invariant", "change"), CASES, ids=[c.__name__ for _, c in CASES])
def test_each_invariant_fails_on_a_history_that_breaks_it(
    invariant: str, change: Callable[[History], None]
) -> None:
    found = broken(change)
    assert invariant in found
    assert found == {invariant}, found


def test_every_invariant_has_a_breaking_history() -> None:
    assert {i for i, _ in CASES} == set(INVARIANTS)


def test_a_full_bucket_or_slot_may_leave_a_record_out() -> None:
    h = clean()
    d = h.index[NS]
    d.buckets[12] = [1, 1000, 1001, 1002]  # at the cap: the 5th article is not added
    d.records.update({s: StoredRecord(f"f{s}", C3, (12,)) for s in (1000, 1001, 1002)})
    found = {v.detail for v in check(h) if v.invariant == "index"}
    assert not any("missing from its bucket" in f for f in found), found


def test_a_poison_key_cut_short_still_matches_its_prefix() -> None:
    h = clean()
    h.poison.append(Poison("oversize_key#2", b"poison-2:", frozenset({"oversize_key"})))
    h.outputs.append(Out("dlq", 1, 0, b"poison-2:\x01\x02", dead(b"poison-2:", "oversize_key")))
    assert check(h) == []


def test_a_deleted_articles_replay_may_be_dead_lettered_as_deleted() -> None:
    h = clean()
    h.outputs.append(Out("dlq", 2, 5, b"d1", dead(b"d1", "deleted")))
    assert check(h) == []


@given(st.permutations(range(6)))
def test_verdict_judgement_does_not_depend_on_the_reading_order(order: list[int]) -> None:
    """The watcher reads partitions interleaved in any order: the judge goes by each record's
    partition and offset, never by the order they were read in."""
    h = clean()
    h.outputs = [h.outputs[i] for i in order]
    assert check(h) == []


def test_offsets_that_moved_on_or_a_record_read_twice_pass() -> None:
    """Committed offsets may grow across a restart (the group kept working) and a new partition
    may appear; the same record read again at its offset is a re-read, not a rewritten log."""
    h = clean()
    h.offsets.append(OffsetCheck(9.5, {0: 12, 1: 7}, {0: 15, 1: 7, 2: 1}))
    h.outputs.append(Out("verdicts", 0, 0, b"a1", verdict("a1", 1)))
    assert check(h) == []


def test_a_worker_that_exits_while_the_broker_is_away_is_no_violation() -> None:
    """It cannot bootstrap or publish, exits uncommitted, and a restart fixes it; the same exit
    with the broker up is a crash."""
    h = clean()
    h.exits.append(Exit("w2", 1, killed=False, stopped=False, broker_away=True))
    assert check(h) == []
    h.exits.append(Exit("w3", 1, killed=False, stopped=False))
    assert {v.invariant for v in check(h)} == {"workers"}
