"""The fault checker's seeded plan: what to produce, when, and which faults to inject when.

A pure function of the seed, so a failing seed names its whole run. A restarted Tansu (memory
storage) has nothing left to judge: ``broker_restart`` is left out of its runs
(:data:`UNSUPPORTED`).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass

import orjson

from harness.chaos_check import Poison
from harness.corpus import groups_of_copies
from harness.kafka import CODECS

__all__ = [
    "BROKERS",
    "FAULT_KINDS",
    "NAMESPACE",
    "OTHER_NAMESPACE",
    "UNSUPPORTED",
    "Fault",
    "Msg",
    "Plan",
    "describe",
    "make_plan",
]

NAMESPACE = "chaos"
OTHER_NAMESPACE = "chaos-other-scheme"  # pre-created under another threshold (another scheme)
FAULT_KINDS = ("kill", "pause", "redis_restart", "redis_oom", "broker_restart")
BROKERS = ("kafka", "tansu")
UNSUPPORTED = {"tansu": frozenset({"broker_restart"})}  # fault kinds a broker cannot take
MAX_MESSAGE_BYTES = 32_768  # the workers' NEARDUP_MAX_MESSAGE_BYTES; valid texts stay below
OVERSIZE_KEY_BYTES = 200_000
COMPRESSED_SHARE = 0.25  # articles a librdkafka producer sends in compressed batches


@dataclass(frozen=True)
class Msg:
    """One input message, sent at ``at_s`` to ``partition``; ``codec``: by librdkafka in a batch
    compressed with it, else by aiokafka uncompressed."""

    kind: str
    ident: str
    key: bytes
    value: bytes | None
    partition: int
    at_s: float
    codec: str | None = None


@dataclass(frozen=True)
class Fault:
    kind: str
    at_s: float
    worker: int  # slot, for kill and pause
    duration_s: float  # pause, redis_oom, broker_restart (time down)


@dataclass(frozen=True)
class Plan:
    seed: int
    partitions: int
    workers: int
    window_s: float
    broker: str
    messages: tuple[Msg, ...]
    faults: tuple[Fault, ...]
    articles: dict[str, str]  # id -> namespace of the valid articles
    groups: list[list[str]]
    deleted: frozenset[str]
    poison: tuple[Poison, ...]


def _article(ident: str, text: str) -> bytes:
    return orjson.dumps({"id": ident, "text": text, "namespace": NAMESPACE})


def _poison(n: int, text: str) -> list[tuple[Poison, bytes, bytes]]:
    """(what the checker expects, key, value) of each poison kind; keys start ``poison-N:``."""

    def key(i: int, tail: bytes = b"") -> bytes:
        return f"poison-{n + i}:".encode() + tail

    control = bytes(range(1, 32)) * (OVERSIZE_KEY_BYTES // 31 + 1)
    kinds: list[tuple[str, bytes, bytes | None, set[str]]] = [
        ("not_json", b"", b"{this is not json", {"invalid_json"}),
        ("invalid_utf8", b"", b'{"id": "x", "text": "caf\xc3 \xff\xfe"}', {"invalid_utf8"}),
        ("missing_id", b"", orjson.dumps({"text": text, "namespace": NAMESPACE}), {"missing_id"}),
        (
            "missing_text",
            b"",
            orjson.dumps({"id": "poison-text", "namespace": NAMESPACE}),
            {"missing_text"},
        ),
        (
            "oversize_text",
            b"",
            _article("poison-big", "word " * (MAX_MESSAGE_BYTES // 4)),
            {"oversize"},
        ),
        # a valid article under a key no record may carry whole (key size is judged first)
        (
            "oversize_key",
            control[:OVERSIZE_KEY_BYTES],
            _article(f"poison-{n + 5}", text + " k"),
            {"oversize_key"},
        ),
        (
            "oversize_key_not_json",
            control[:OVERSIZE_KEY_BYTES],
            b"\x00not json",
            {"oversize_key", "invalid_json"},
        ),
        (
            "other_scheme",
            b"",
            orjson.dumps({"id": f"poison-{n + 7}", "text": text, "namespace": OTHER_NAMESPACE}),
            {"scheme_mismatch"},
        ),
    ]
    return [
        (Poison(f"{name}#{n + i}", key(i), frozenset(reasons)), key(i, tail), value or b"")
        for i, (name, tail, value, reasons) in enumerate(kinds)
    ]


def make_plan(
    seed: int,
    *,
    n_groups: int = 24,
    group_size: int = 4,
    n_deleted: int = 8,
    partitions: int = 4,
    workers: int = 2,
    window_s: float = 30.0,
    session_timeout_s: float = 6.0,
    skip: frozenset[str] = frozenset(),
    broker: str = "kafka",
) -> Plan:
    """The run of ``seed`` on ``broker``; ``skip`` leaves out poison or fault kinds by name (to see
    what else a run finds while one defect crash-loops the workers), as :data:`UNSUPPORTED` does."""
    if broker not in BROKERS:
        raise ValueError(f"broker {broker!r}: one of {BROKERS}")
    skip = skip | UNSUPPORTED.get(broker, frozenset())
    rng = random.Random(seed)
    raw = groups_of_copies(n_groups + n_deleted + 1, group_size, seed)
    part: dict[str, int] = {}
    texts: dict[str, str] = {}
    groups: list[list[str]] = []
    for g, group in enumerate(raw[:n_groups]):
        ids = [f"a{g}-{c}" for c in range(len(group))]
        for ident, doc in zip(ids, group, strict=True):
            texts[ident] = doc["text"]
        if rng.random() < 0.4:  # a verbatim copy too
            ids.append(f"a{g}-x")
            texts[ids[-1]] = group[0]["text"]
        groups.append(ids)
    deletable = [f"d{i}" for i in range(n_deleted)]
    for ident, group in zip(deletable, raw[n_groups:-1], strict=True):
        texts[ident] = group[0]["text"]
    for ident in texts:
        part[ident] = rng.randrange(partitions)

    def at(lo: float, hi: float) -> float:
        return round(rng.uniform(lo, hi) * window_s, 2)

    msgs: list[Msg] = []
    for ident, text in texts.items():
        sent = at(0.0, 0.7)
        codec = rng.choice(CODECS) if rng.random() < COMPRESSED_SHARE else None
        msgs.append(
            Msg("article", ident, ident.encode(), _article(ident, text), part[ident], sent, codec)
        )
        if rng.random() < 0.2 or ident in deletable:  # at-least-once producers repeat
            again = round(sent + rng.uniform(0.5, 10.0), 2)
            msgs.append(
                Msg("replay", ident, ident.encode(), _article(ident, text), part[ident], again)
            )
    for ident in deletable:
        first = min(m.at_s for m in msgs if m.ident == ident)
        gone = round(first + rng.uniform(0.0, 6.0), 2)  # may race its own registration
        msgs.append(Msg("tombstone", ident, ident.encode(), None, part[ident], gone))
        back = round(gone + rng.uniform(0.5, 6.0), 2)  # an old message replayed after the delete
        msgs.append(
            Msg("replay", ident, ident.encode(), _article(ident, texts[ident]), part[ident], back)
        )
    poison = []
    for p, key, value in _poison(1000, raw[-1][0]["text"]):
        if p.name.split("#")[0] in skip:
            continue
        poison.append(p)
        msgs.append(Msg("poison", p.name, key, value, rng.randrange(partitions), at(0.05, 0.9)))
    msgs.sort(key=lambda m: m.at_s)  # stable: one id's messages keep their order
    faults = _schedule(rng, workers, window_s, session_timeout_s, skip)
    return Plan(
        seed=seed,
        partitions=partitions,
        workers=workers,
        window_s=window_s,
        broker=broker,
        messages=tuple(msgs),
        faults=faults,
        articles={i: NAMESPACE for i in texts},
        groups=groups,
        deleted=frozenset(deletable),
        poison=tuple(poison),
    )


def _schedule(
    rng: random.Random, workers: int, window_s: float, session_s: float, skip: frozenset[str]
) -> tuple[Fault, ...]:
    """Every fault kind once, in a random order at random times, plus up to two more."""
    kinds = [k for k in FAULT_KINDS if k not in skip]
    rng.shuffle(kinds)
    kinds += [rng.choice(kinds) for _ in range(rng.randrange(3))] if kinds else []
    faults = []
    for kind in kinds:
        start = round(rng.uniform(0.1, 0.85) * window_s, 2)
        duration = 0.0
        if kind == "pause":  # longer than the session timeout: the group moves on without it
            duration = round(session_s + rng.uniform(2.0, 5.0), 2)
        elif kind == "redis_oom":
            duration = round(rng.uniform(3.0, 6.0), 2)
        elif kind == "broker_restart":  # how long it stays down before it is started again
            duration = round(rng.uniform(1.0, 4.0), 2)
        faults.append(Fault(kind, start, rng.randrange(workers), duration))
    return tuple(sorted(faults, key=lambda f: f.at_s))


def describe(plan: Plan) -> str:
    """The seed's schedule and workload, one line each, to print with a failing seed."""
    kinds = dict(Counter(m.kind for m in plan.messages))
    lines = [
        f"seed {plan.seed} on {plan.broker}: {plan.workers} workers, {plan.partitions} partitions, "
        f"{plan.window_s:.0f}s window; messages {kinds}; "
        f"{len(plan.groups)} groups, {len(plan.deleted)} deleted, {len(plan.poison)} poison, "
        f"{sum(m.codec is not None for m in plan.messages)} in compressed batches"
    ]
    for f in plan.faults:
        extra = f" for {f.duration_s:.1f}s" if f.duration_s else ""
        target = f" worker {f.worker}" if f.kind in ("kill", "pause") else ""
        lines.append(f"  t={f.at_s:5.1f}s {f.kind}{target}{extra}")
    return "\n".join(lines)
