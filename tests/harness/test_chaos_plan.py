"""The fault checker's seeded plan: a seed names one run, and every run has every fault kind, every
poison kind and deletes that race replays."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.chaos_plan import FAULT_KINDS, UNSUPPORTED, make_plan
from harness.kafka import CODECS


def test_a_seed_names_one_plan_and_another_seed_another() -> None:
    assert make_plan(7) == make_plan(7)
    assert make_plan(7).faults != make_plan(8).faults


@settings(max_examples=15)
@given(st.integers(0, 10_000))
def test_every_plan_has_every_fault_kind_and_zombies_outlive_their_session(seed: int) -> None:
    plan = make_plan(seed, session_timeout_s=6.0)
    assert {f.kind for f in plan.faults} == set(FAULT_KINDS)
    assert all(f.duration_s > 6.0 for f in plan.faults if f.kind == "pause")
    assert all(0 <= f.worker < plan.workers for f in plan.faults)
    assert all(f.duration_s > 0 for f in plan.faults if f.kind == "broker_restart")


def test_tansu_runs_leave_the_broker_restart_out_and_keep_the_rest() -> None:
    """A memory broker loses everything on restart; its runs still take every other fault."""
    assert UNSUPPORTED["tansu"] == {"broker_restart"}
    plan = make_plan(3, broker="tansu")
    assert plan.broker == "tansu"
    assert {f.kind for f in plan.faults} == set(FAULT_KINDS) - {"broker_restart"}
    assert make_plan(3).messages == plan.messages  # the workload does not depend on the broker
    with pytest.raises(ValueError, match="broker"):
        make_plan(3, broker="redpanda")


@settings(max_examples=15)
@given(st.integers(0, 10_000))
def test_one_ids_messages_share_a_partition_and_a_tombstone_precedes_a_replay(seed: int) -> None:
    plan = make_plan(seed)
    by_id: dict[str, list[tuple[str, int]]] = {}
    for m in plan.messages:
        if m.kind != "poison":
            by_id.setdefault(m.ident, []).append((m.kind, m.partition))
    for ident, msgs in by_id.items():
        assert len({p for _, p in msgs}) == 1, ident
        kinds = [k for k, _ in msgs]
        assert kinds[0] == "article"
        if ident in plan.deleted:
            assert "replay" in kinds[kinds.index("tombstone") :], "no replay after the delete"
    assert set(plan.articles) == set(by_id)


def test_the_poison_covers_every_kind_and_skip_leaves_kinds_out() -> None:
    names = {p.name.split("#")[0] for p in make_plan(1).poison}
    assert {"not_json", "invalid_utf8", "missing_id", "missing_text", "oversize_text",
            "oversize_key", "other_scheme"} <= names  # fmt: skip
    fewer = make_plan(1, skip=frozenset({"other_scheme", "redis_oom"}))
    assert "other_scheme" not in {p.name.split("#")[0] for p in fewer.poison}
    assert "redis_oom" not in {f.kind for f in fewer.faults}


@settings(max_examples=10)
@given(st.integers(0, 10_000))
def test_only_valid_articles_travel_compressed_and_every_seed_has_some(seed: int) -> None:
    plan = make_plan(seed)
    compressed = [m for m in plan.messages if m.codec is not None]
    assert compressed and all(m.kind == "article" for m in compressed)
    assert {m.codec for m in compressed} <= set(CODECS)
