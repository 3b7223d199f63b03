"""Per-namespace policies from a TOML file: good and bad files, the index keeping its scheme,
decision settings that apply from then on, and the file as the worker and the CLI read it."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from neardup.stream.engine.engine import Engine
from neardup.stream.errors import NamespacesFileError, NeardupError, SchemeMismatchError
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.model import Article
from neardup.stream.namespaces.policies import load, parse
from neardup.stream.namespaces.policy import Policy
from neardup.stream.worker.config import Settings

NEARDUP = Path(sys.executable).parent / "neardup"
GOOD = """
[namespace.comments]
short_threshold = 0.85
facts = "relaxed"

[namespace.articles]
measure = "containment"
threshold = 0.6
retention_s = 86400
boilerplate_min_docs = 0

[namespace.pages]
boilerplate_sources = ["courier.example", "ledger.example"]
"""


def test_a_file_declares_policies_over_the_defaults() -> None:
    default = Policy(max_matches=5)
    got = parse(GOOD, default)
    assert set(got) == {"comments", "articles", "pages"}
    assert got["pages"] == Policy(
        max_matches=5, boilerplate_sources=("courier.example", "ledger.example")
    )
    assert got["pages"].teaches("ledger.example") and not got["pages"].teaches("copier.example")
    assert got["comments"] == Policy(max_matches=5, short_threshold=0.85, facts="relaxed")
    assert got["articles"] == Policy(
        max_matches=5,
        measure="containment",
        threshold=0.6,
        retention_s=86400.0,
        boilerplate_min_docs=0,
    )
    assert parse("", default) == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[namespace.a]\nthreshhold = 0.6\n", "namespace 'a': unknown setting 'threshhold'"),
        (
            '[namespace.a]\nthreshold = "high"\n',
            "namespace 'a': threshold = 'high' must be a number",
        ),
        ("[namespace.a]\nthreshold = 2\n", "namespace 'a': threshold must be in (0, 1], got 2.0"),
        ('[namespace.a]\nmeasure = "cosine"\n', "namespace 'a': measure must be 'jaccard' or"),
        (
            "[namespace.a]\nbucket_cap = 1.5\n",
            "namespace 'a': bucket_cap = 1.5 must be a whole number",
        ),
        ("[namespace.a]\nkeep_text = 1\n", "namespace 'a': keep_text = 1 must be a boolean"),
        ('[namespace."no spaces"]\nthreshold = 0.9\n', "namespace 'no spaces': a name must match"),
        ("[namespaces.a]\nthreshold = 0.9\n", "unknown top-level key 'namespaces'"),
        ("[namespace.a\nthreshold = 0.9\n", "not valid TOML"),
        ("[namespace.a]\nbucket_salts = 1\n", "unknown setting 'bucket_salts'"),
        (
            '[namespace.a]\nboilerplate_sources = "a.example"\n',
            "boilerplate_sources = 'a.example' must be a list of source names",
        ),
    ],
)
def test_a_bad_file_is_refused_naming_the_namespace_and_the_field(text: str, message: str) -> None:
    with pytest.raises(NamespacesFileError) as err:
        parse(text, Policy(), source="namespaces file 'ns.toml'")
    assert str(err.value).startswith("namespaces file 'ns.toml': ")
    assert message in str(err.value)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(NamespacesFileError, match=r"nope\.toml.*No such file"):
        load(tmp_path / "nope.toml", Policy())


def test_settings_read_the_file_and_refuse_a_bad_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ns.toml"
    path.write_text(GOOD)
    monkeypatch.setenv("NEARDUP_NAMESPACES_FILE", str(path))
    monkeypatch.setenv("NEARDUP_MAX_MATCHES", "3")
    policies = Settings().policies()
    assert policies["articles"].measure == "containment" and policies["articles"].max_matches == 3
    path.write_text("[namespace.a]\nthreshold = 7\n")
    with pytest.raises(ValidationError, match="namespace 'a': threshold must be in"):
        Settings()


def test_the_worker_refuses_to_start_with_a_bad_file(tmp_path: Path) -> None:
    path = tmp_path / "ns.toml"
    path.write_text("[namespace.articles]\nmesure = 'containment'\n")
    out = subprocess.run(
        [str(NEARDUP), "worker"],
        env={"NEARDUP_NAMESPACES_FILE": str(path), "PATH": ""},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "namespace 'articles': unknown setting 'mesure'" in " ".join(out.stderr.split())


TEXT = " ".join(f"word{i}" for i in range(200))


async def test_a_raised_threshold_keeps_the_namespace_banding_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    index = MemoryIndex()
    await Engine(index).process([Article("a", TEXT, "news")])
    caplog.set_level(logging.WARNING, logger="neardup.engine")
    engine = Engine(index, policies={"news": Policy(threshold=0.9)})
    (v,) = await engine.process([Article("b", TEXT + " tail", "news")])
    assert not isinstance(v, NeardupError) and v.duplicate_of == "a"
    kept = engine.policy_for("news")
    assert kept.bands_rows == Policy().bands_rows and kept.threshold == 0.9
    said = caplog.text
    assert "namespace 'news' keeps its banding" in said
    assert "namespace 'news': threshold 0.8 -> 0.9, from now on" in said
    caplog.clear()
    await Engine(index, policies={"news": Policy(threshold=0.9)}).process(
        [Article("c", "x", "news")]
    )
    assert "from now on" not in caplog.text  # recorded: said once


async def test_a_policy_that_changes_the_scheme_is_refused_with_what_differs() -> None:
    index = MemoryIndex()
    await Engine(index).process([Article("a", TEXT, "news")])
    for policy in (Policy(num_perm=64), Policy(threshold=0.5), Policy(measure="containment")):
        (res,) = await Engine(index, policies={"news": policy}).process(
            [Article("b", TEXT, "news")]
        )
        assert isinstance(res, SchemeMismatchError), policy
        assert "differs in:" in str(res)


def test_dedup_takes_a_namespaces_file(tmp_path: Path) -> None:
    spam = ["Cheap pills, call 555-0101 today", "Cheap pills, call 555-0199 today"]
    lines = [
        {"id": f"{ns}{i}", "text": t, "namespace": ns}
        for ns in ("forum", "comments")
        for i, t in enumerate(spam)
    ]
    src, conf = tmp_path / "in.jsonl", tmp_path / "ns.toml"
    src.write_text("".join(json.dumps(x) + "\n" for x in lines))
    conf.write_text(GOOD)
    out = subprocess.run(
        [str(NEARDUP), "dedup", str(src), "--no-progress", "--namespaces-file", str(conf)],
        capture_output=True,
        timeout=120,
        check=True,
    )
    got = {v["id"]: v["verdict"] for v in map(json.loads, out.stdout.splitlines())}
    assert got == {
        "forum0": "original",
        "forum1": "original",  # the defaults: strict facts
        "comments0": "original",
        "comments1": "near_duplicate",  # relaxed: one campaign
    }
    conf.write_text("[namespace.comments]\nfacts = 'loose'\n")
    bad = subprocess.run(
        [str(NEARDUP), "dedup", str(src), "--namespaces-file", str(conf)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "namespace 'comments': facts must be" in " ".join(
        bad.stderr.split()
    )
