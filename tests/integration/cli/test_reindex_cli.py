"""``neardup export`` and ``neardup reindex`` as users run them, on a real Redis, and a rebuild
from a topic on a real broker (Apache Kafka and Tansu) that loses nothing sent while it ran."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from pathlib import Path

import orjson
from aiokafka import AIOKafkaProducer
from redis.asyncio import Redis

from harness import data
from harness.kafka import create_topics, delete_topics
from neardup.stream.engine.reindex import Rebuilt, TopicSource, reindex
from neardup.stream.index.redis.index import RedisIndex
from neardup.stream.namespaces import aliases
from neardup.stream.namespaces.policy import Policy

NEARDUP = Path(sys.executable).parent / "neardup"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(NEARDUP), *args], capture_output=True, text=True, timeout=180)


def _lines(ns: str) -> list[dict[str, str]]:
    stories = [r["text"] for r in data.clough_stevenson() if len(r["text"].split()) >= 250][:3]
    return [
        {"id": "a", "namespace": ns, "text": stories[0], "url": "https://wire.example/a"},
        {"id": "ex", "namespace": ns, "text": " ".join(stories[0].split()[40:160])},
        {"id": "b", "namespace": ns, "text": stories[1]},
        {"id": "c", "namespace": ns, "text": stories[2]},
    ]


async def test_export_then_reindex_under_containment_and_read_through_the_switch(
    redis_url: str, tmp_path: Path
) -> None:
    ns = f"rx-{uuid.uuid4().hex[:6]}"
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in _lines(ns)))
    built = _run("dedup", str(src), "--store", redis_url, "--no-progress")
    assert built.returncode == 0, built.stderr
    dump = tmp_path / "export.jsonl"
    got = _run("export", ns, "--store", redis_url, "-o", str(dump))
    assert got.returncode == 0 and "exported 4 articles" in got.stderr, got.stderr
    exported = [json.loads(x) for x in dump.read_text().splitlines()]
    assert [x["id"] for x in exported] == ["a", "ex", "b", "c"]
    assert exported[0]["source"] == "wire.example" and exported[1]["text"] == _lines(ns)[1]["text"]

    toml = tmp_path / "ns.toml"
    toml.write_text(f'[namespace.{ns}]\nmeasure = "containment"\nthreshold = 0.8\n')
    done = _run(
        "reindex", ns, "--store", redis_url, "--from", str(dump), "--namespaces-file", str(toml)
    )
    assert done.returncode == 0, done.stderr
    assert f"{ns}.r2" in done.stderr and "near_duplicate" in done.stderr
    shown = _run("inspect", "ex", "--store", redis_url, "--namespace", ns, "--json")
    assert shown.returncode == 0, shown.stderr
    ex = json.loads(shown.stdout)
    assert (ex["namespace"], ex["verdict"]["verdict"], ex["verdict"]["direction"]) == (
        ns,
        "near_duplicate",
        "excerpt",
    )
    listed = _run("namespaces", "--store", redis_url, "--json")
    names = {r["namespace"] for r in json.loads(listed.stdout)["namespaces"]}
    assert {ns, f"{ns}.r2"} <= names
    again = _run("reindex", ns, "--store", redis_url, "--from", str(dump), "--no-progress")
    assert again.returncode == 0 and f"{ns}.r3" in again.stderr, again.stderr


def _indexed_and_exported(prefix: str, redis_url: str, tmp_path: Path) -> tuple[str, Path]:
    """A fresh namespace holding :func:`_lines`, indexed with ``neardup dedup`` and exported
    with ``neardup export``: its name and the export's path."""
    ns = f"{prefix}-{uuid.uuid4().hex[:6]}"
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in _lines(ns)))
    assert _run("dedup", str(src), "--store", redis_url, "--no-progress").returncode == 0
    dump = tmp_path / "export.jsonl"
    assert _run("export", ns, "--store", redis_url, "-o", str(dump)).returncode == 0
    return ns, dump


async def test_a_namespace_becomes_sharded_by_a_rebuild(
    redis_url: str, redis_client: Redis, tmp_path: Path
) -> None:
    """A namespace keeps the layout it was built with: asking for shards later is refused with
    what differs. ``neardup reindex`` under a policy of ``shards = 4`` rebuilds it sharded and
    switches to it; copies sent afterwards are found through the shard groups."""
    ns, dump = _indexed_and_exported("rs", redis_url, tmp_path)
    copy = tmp_path / "copy.jsonl"
    text = _lines(ns)[2]["text"].replace(" the ", " a ", 3)
    copy.write_text(json.dumps({"id": "b2", "namespace": ns, "text": text}) + "\n")
    refused = _run("dedup", str(copy), "--store", redis_url, "--no-progress", "--shards", "4")
    said = " ".join((refused.stdout + refused.stderr).split())
    assert "differs in: sharded_format, shards" in said, refused
    toml = tmp_path / "ns.toml"
    toml.write_text(f"[namespace.{ns}]\nshards = 4\n")
    done = _run(
        "reindex", ns, "--store", redis_url, "--from", str(dump), "--namespaces-file", str(toml)
    )
    assert done.returncode == 0, done.stderr
    target = f"{ns}.r2"
    assert await redis_client.keys(f"nd:{{{target}/*}}:b:*")
    assert not await redis_client.keys(f"nd:{{{target}}}:b:*")
    listed = json.loads(_run("namespaces", "--store", redis_url, "--json").stdout)
    groups = {r["namespace"]: r["shard_groups"] for r in listed["namespaces"]}
    assert (groups[ns], groups[target]) == (1, 4)
    out = tmp_path / "out.jsonl"
    sent = _run("dedup", str(copy), "--store", redis_url, "--no-progress", "-o", str(out))
    assert sent.returncode == 0, sent.stderr
    (verdict,) = [json.loads(x) for x in out.read_text().splitlines()]
    assert (verdict["verdict"], verdict["duplicate_of"]) == ("near_duplicate", "b"), verdict


async def test_a_sharded_namespace_of_the_old_format_is_migrated_by_a_rebuild(
    redis_url: str, redis_client: Redis, tmp_path: Path
) -> None:
    """A sharded namespace of sharded format 1 (unkeyed id hashes: its stored scheme has no
    ``sharded_format``) is refused with both formats named, exported, and rebuilt by
    ``neardup reindex`` into one of format 2 with a secret of its own; copies are found."""
    ns = f"ro-{uuid.uuid4().hex[:6]}"
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in _lines(ns)))
    shards = ("--shards", "4")
    assert _run("dedup", str(src), "--store", redis_url, "--no-progress", *shards).returncode == 0
    meta = f"nd:{{{ns}}}:m"
    scheme, tail = (await redis_client.hget(meta, "scheme")).split(b"|", 1)
    old = orjson.loads(scheme)
    del old["sharded_format"]  # as a worker of sharded format 1 wrote it
    await redis_client.hset(
        meta, "scheme", orjson.dumps(old, option=orjson.OPT_SORT_KEYS) + b"|" + tail
    )
    copy = tmp_path / "copy.jsonl"
    text = _lines(ns)[2]["text"].replace(" the ", " a ", 3)
    copy.write_text(json.dumps({"id": "b2", "namespace": ns, "text": text}) + "\n")
    refused = _run("dedup", str(copy), "--store", redis_url, "--no-progress", *shards)
    said = " ".join((refused.stdout + refused.stderr).split())  # (the table wraps lines)
    assert "sharded storage format 1" in said and "sharded format 2" in said, said
    dump = tmp_path / "export.jsonl"
    assert _run("export", ns, "--store", redis_url, "-o", str(dump)).returncode == 0
    toml = tmp_path / "ns.toml"
    toml.write_text(f"[namespace.{ns}]\nshards = 4\n")
    done = _run(
        "reindex", ns, "--store", redis_url, "--from", str(dump), "--namespaces-file", str(toml)
    )
    assert done.returncode == 0, done.stderr
    target_meta = f"nd:{{{ns}.r2}}:m"
    assert (
        orjson.loads((await redis_client.hget(target_meta, "scheme")).split(b"|")[0])[
            "sharded_format"
        ]
        == 2
    )
    assert await redis_client.hget(target_meta, "idkey") not in (
        None,
        await redis_client.hget(meta, "idkey"),
    )
    out = tmp_path / "out.jsonl"
    sent = _run("dedup", str(copy), "--store", redis_url, "--no-progress", "-o", str(out))
    assert sent.returncode == 0, sent.stderr
    (verdict,) = [json.loads(x) for x in out.read_text().splitlines()]
    assert (verdict["verdict"], verdict["duplicate_of"]) == ("near_duplicate", "b"), verdict


def test_a_takedown_survives_a_rebuild_from_an_export_made_before_it(
    redis_url: str, tmp_path: Path
) -> None:
    """The operator's sequence: export, ``neardup delete``, ``neardup reindex --from`` the
    export. After the switch the article is still gone, and an article registered after the
    export (the workers went on) is in the rebuilt namespace."""
    ns, dump = _indexed_and_exported("rt", redis_url, tmp_path)
    gone = _run("delete", "b", "--store", redis_url, "--namespace", ns)
    assert gone.returncode == 0, gone.stderr
    late = tmp_path / "late.jsonl"
    story = " ".join(f"harbour{i} pilots{i % 7} strike" for i in range(60))
    late.write_text(json.dumps({"id": "late", "namespace": ns, "text": story}) + "\n")
    assert _run("dedup", str(late), "--store", redis_url, "--no-progress").returncode == 0
    done = _run("reindex", ns, "--store", redis_url, "--from", str(dump), "--no-progress")
    assert done.returncode == 0, done.stderr
    shown = _run("inspect", "b", "--store", redis_url, "--namespace", ns, "--json")
    assert shown.returncode == 2 and "not indexed: b" in shown.stderr, shown.stdout
    kept = _run("inspect", "late", "--store", redis_url, "--namespace", ns, "--json")
    assert kept.returncode == 0, kept.stderr
    assert json.loads(kept.stdout)["verdict"]["verdict"] == "original"


def test_which_namespace_serves_a_name_is_shown_and_the_left_behind_can_be_dropped(
    redis_url: str, tmp_path: Path
) -> None:
    ns, dump = _indexed_and_exported("rd", redis_url, tmp_path)
    done = _run("reindex", ns, "--store", redis_url, "--from", str(dump), "--no-progress")
    assert done.returncode == 0, done.stderr
    listed = _run("namespaces", "--store", redis_url, "--json")
    rows = {r["namespace"]: r for r in json.loads(listed.stdout)["namespaces"]}
    assert (rows[ns]["serves"], rows[ns]["rebuilt_into"]) == ([], f"{ns}.r2")
    assert (rows[f"{ns}.r2"]["serves"], rows[f"{ns}.r2"]["rebuilt_into"]) == ([ns], None)
    live = _run("namespaces", "drop", f"{ns}.r2", "--store", redis_url)
    assert live.returncode == 2 and "is live" in live.stderr, live.stderr
    gone = _run("namespaces", "drop", ns, "--store", redis_url)
    assert gone.returncode == 0 and "keys removed" in gone.stderr, gone.stderr
    after = {
        r["namespace"]
        for r in json.loads(_run("namespaces", "--store", redis_url, "--json").stdout)["namespaces"]
    }
    assert ns not in after and f"{ns}.r2" in after
    shown = _run("inspect", "ex", "--store", redis_url, "--namespace", ns, "--json")
    assert shown.returncode == 0, shown.stderr  # the name still finds its articles
    unknown = _run("namespaces", "drop", f"{ns}-nope", "--store", redis_url)
    assert unknown.returncode == 2 and "no namespace" in unknown.stderr
    nothing = tmp_path / "nothing.jsonl"
    absent = _run("export", f"{ns}-nope", "--store", redis_url, "-o", str(nothing))
    assert absent.returncode == 2 and "no namespace" in absent.stderr and not nothing.exists()


def test_reindex_says_what_is_wrong_with_its_arguments(redis_url: str, tmp_path: Path) -> None:
    neither = _run("reindex", "news", "--store", redis_url)
    assert neither.returncode == 2 and "--from FILE or --from-topic" in neither.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text("[namespace.news]\nmeasure = 'cosine'\n")
    f = tmp_path / "in.jsonl"
    f.write_text('{"id": "a", "text": "x"}\n')
    refused = _run(
        "reindex", "news", "--store", redis_url, "--from", str(f), "--namespaces-file", str(bad)
    )
    assert refused.returncode == 2 and "measure" in refused.stderr, refused.stderr
    away = _run("reindex", "news", "--store", "redis://127.0.0.1:1/0", "--from", str(f))
    assert away.returncode == 1 and "neardup reindex:" in away.stderr
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text('{"id": "a", "text": "fine text here"}\nnot json\n')
    partly = _run(
        "reindex", f"g-{uuid.uuid4().hex[:6]}", "--store", redis_url, "--from", str(garbage)
    )
    assert partly.returncode == 2 and "line 2" in partly.stderr and "invalid input" in partly.stderr


async def test_a_rebuild_from_the_topic_decides_what_arrived_while_it_ran(
    redis_client: Redis, broker_bootstrap: str
) -> None:
    """On Apache Kafka and on Tansu."""
    kafka_bootstrap = broker_bootstrap
    ns = f"rt-{uuid.uuid4().hex[:6]}"
    topic = f"reindex-{uuid.uuid4().hex[:10]}"
    await create_topics(kafka_bootstrap, [topic], 1)  # one partition: one order
    first, later = _lines(ns)[:3], _lines(ns)[3:]
    producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap)
    await producer.start()
    try:
        for x in first:
            await producer.send_and_wait(topic, orjson.dumps(x), key=x["id"].encode())
        headers = [("namespace", ns.encode())]
        await producer.send_and_wait(topic, None, key=b"b", headers=headers)  # b taken down
        # another tenant's article, and a message the workers dead-lettered: skipped, counted
        other = {"id": "o", "namespace": f"{ns}-other", "text": "another tenant's story"}
        await producer.send_and_wait(topic, orjson.dumps(other), key=b"o")
        await producer.send_and_wait(topic, b"{not json", key=b"bad")
        source = TopicSource(kafka_bootstrap, topic)
        sending: list[asyncio.Task[object]] = []

        def during(state: Rebuilt, n: int) -> None:
            if not sending:  # sent after the first pass's end: the catch-up's to find
                sending.extend(
                    asyncio.get_running_loop().create_task(
                        producer.send_and_wait(topic, orjson.dumps(x), key=x["id"].encode())
                    )
                    for x in later
                )

        index = RedisIndex(redis_client)
        await index.load_functions()
        done = await reindex(
            index,
            ns,
            Policy(measure="containment"),
            source.first,
            catch_up=source.rest,
            on_batch=during,
            wait_s=2.0,
        )
        await asyncio.gather(*sending)
    finally:
        await producer.stop()
        await delete_topics(kafka_bootstrap, [topic])
    assert (done.target, done.switched, done.caught_up) == (f"{ns}.r2", True, 1)
    assert done.verdicts == {"original": 3, "near_duplicate": 1, "deleted": 1}
    assert source.total == 6 and source.invalid == {"invalid_json": 1}
    assert done.other_namespaces == 1
    assert await index.seq_of(f"{ns}.r2", "b") is None and await index.seq_of(f"{ns}.r2", "c") == 4
    assert (await aliases.resolve(index, ns)) == f"{ns}.r2"
