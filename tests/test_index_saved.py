"""A memory ``neardup.Index`` kept between runs: ``save``/``load`` and pickling give an index
whose later verdicts are those of one never saved; the file is data (not pickle), versioned with
its scheme, and a file of another version or scheme, cut short or damaged, is refused clearly."""

from __future__ import annotations

import copy
import pickle
import struct
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import data
from neardup import Index, NeardupError, Policy
from neardup.stream.errors import DeletedError, IndexFileError, SchemeMismatchError
from neardup.stream.index import memory_file
from neardup.stream.namespaces import aliases

STORIES = [d["text"] for d in data.reuters()[:80] if len(d["text"]) > 400][:6]
LEADS = [" ".join(text.split()[:14]) for text in STORIES[3:6]]  # short texts: their leads


def _edited(text: str) -> str:
    return text.replace(" the ", " a ", 3) + " An added closing line."


# texts that are originals, near copies, verbatim copies and short texts of one another
POOL = [*STORIES, _edited(STORIES[0]), _edited(STORIES[1]), *LEADS, LEADS[0] + " (updated)"]


def _filled(ops: int = 12, **kw: Any) -> Index:
    index = Index(**kw)
    for i in range(ops):
        index.add(i, POOL[i % len(POOL)], source="wire")
    index.remove(3)
    return index


def _state(index: Index) -> tuple[Any, ...]:
    stats = index.stats()
    return (list(index), len(index), stats)


def test_save_and_load_keep_everything_the_verdicts_need(tmp_path: Path) -> None:
    path = tmp_path / "index.ndx"
    with _filled(namespace="kept") as index:
        index.save(path)
        before = _state(index)
        with Index.load(path) as loaded:
            assert loaded.namespace == "kept"
            assert _state(loaded) == before
            assert 3 not in loaded and 4 in loaded
            with pytest.raises(DeletedError):
                loaded.add(3, POOL[3])  # a takedown survives the file
            assert loaded.add(4, POOL[4]) == index.add(4, POOL[4])  # a replay
            assert loaded.add("new", _edited(STORIES[2])) == index.add("new", _edited(STORIES[2]))
    assert [p.name for p in tmp_path.iterdir()] == ["index.ndx"]  # no temporary file left
    assert path.stat().st_mode & 0o777 == 0o600  # the texts are its owner's
    path.chmod(0o640)
    with _filled(2) as index:
        index.save(path)  # replaced whole, its permissions kept
    assert path.stat().st_mode & 0o777 == 0o640
    with Index.load(path) as loaded:
        assert len(loaded) == 2


def test_the_policy_travels_and_a_loaded_index_saves_again(tmp_path: Path) -> None:
    policy = Policy(threshold=0.7, boilerplate_sources=("wire",), max_matches=3)
    with _filled(policy=policy) as index:
        index.save(tmp_path / "a", compress=True)
    with Index.load(tmp_path / "a") as loaded:
        assert loaded._engine.default_policy == policy
        loaded.save(tmp_path / "b")
        with Index.load(tmp_path / "b") as again:
            assert _state(again) == _state(loaded)


def test_an_empty_index_saves_and_loads(tmp_path: Path) -> None:
    with Index(namespace="empty") as index:
        index.save(tmp_path / "e")
    with Index.load(tmp_path / "e", policy=Policy(shingle_size=4)) as loaded:  # no scheme yet
        assert (len(loaded), list(loaded), loaded.namespace) == (0, [], "empty")
        assert loaded.add("a", STORIES[0]).verdict == "original"


def test_pickling_carries_the_same_bytes() -> None:
    with _filled() as index:
        got = pickle.loads(pickle.dumps(index))
        assert isinstance(got, Index) and _state(got) == _state(index)
        assert got.add("x", _edited(STORIES[3])) == index.add("x", _edited(STORIES[3]))
        deep = copy.deepcopy(index)
        assert _state(deep) == _state(index)
        deep.add("only-in-the-copy", STORIES[5])
        assert "only-in-the-copy" not in index
        for other in (got, deep):
            other.close()


def test_a_redis_index_says_its_texts_live_in_redis() -> None:
    index = Index.__new__(Index)  # no server needed: only the store's kind matters
    index.namespace = "news"
    index._engine = type("E", (), {"index": object()})()  # type: ignore[assignment]
    for act in (lambda: index.save("x"), lambda: pickle.dumps(index)):
        with pytest.raises(IndexFileError, match=r"live in Redis.*neardup export news -o FILE"):
            act()


def _rewritten(raw: bytes, **changes: Any) -> bytes:
    """A file with header fields changed and its checksum made right again."""
    start = len(memory_file.MAGIC) + 8
    (n,) = struct.unpack_from("<Q", raw, len(memory_file.MAGIC))
    meta = orjson.loads(raw[start : start + n]) | changes
    head = orjson.dumps(meta)
    framed = memory_file.MAGIC + struct.pack("<Q", len(head)) + head + raw[start + n : -16]
    return framed + memory_file._digest(framed)


def test_another_format_version_is_refused_naming_both(tmp_path: Path) -> None:
    with _filled(4) as index:
        index.save(tmp_path / "v1")
    (tmp_path / "v2").write_bytes(_rewritten((tmp_path / "v1").read_bytes(), version=2))
    with pytest.raises(IndexFileError, match=r"file format version 2; .*reads version 1 only"):
        Index.load(tmp_path / "v2")


def test_another_scheme_is_refused_naming_both(tmp_path: Path) -> None:
    with _filled(4, policy=Policy(shingle_size=4)) as index:
        index.save(tmp_path / "s4")
    with pytest.raises(SchemeMismatchError) as got:
        Index.load(tmp_path / "s4", policy=Policy())
    said = str(got.value)
    assert said.startswith(f"{tmp_path / 's4'}: namespace 'default' was indexed with a different")
    assert "differs in: features" in said
    assert '"shingle":4' in said and '"shingle":3' in said  # stored, and this process's
    # a policy whose banding differs, where the stored banding still serves it, is let through
    with _filled(4) as index:
        index.save(tmp_path / "s3")
    with Index.load(tmp_path / "s3", policy=Policy(threshold=0.85)) as loaded:
        assert len(loaded) == 3


def test_what_is_not_a_saved_index_is_refused(tmp_path: Path) -> None:
    (tmp_path / "p").write_bytes(pickle.dumps({"a": 1}))
    (tmp_path / "empty").write_bytes(b"")
    for name in ("p", "empty"):
        with pytest.raises(IndexFileError, match="not a saved neardup index"):
            Index.load(tmp_path / name)
    with pytest.raises(FileNotFoundError):
        Index.load(tmp_path / "absent")


@pytest.fixture(scope="module")
def saved() -> bytes:
    with _filled(6) as index:
        return index._saved()


@settings(max_examples=200)
@given(st.data())
def test_a_file_cut_short_or_damaged_is_a_clear_error(saved: bytes, data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(saved) - 1), label="cut")
    with pytest.raises(IndexFileError, match=r"(cut short|not a saved neardup index)"):
        Index._from_saved(saved[:cut], "f", None)
    at = data.draw(st.integers(0, len(saved) - 1), label="at")
    flip = data.draw(st.integers(1, 255), label="flip")
    damaged = bytearray(saved)
    damaged[at] ^= flip
    with pytest.raises(IndexFileError):
        Index._from_saved(bytes(damaged), "f", None)
    with pytest.raises(IndexFileError, match="past its end"):
        Index._from_saved(saved + b"\0", "f", None)


def test_a_file_that_lies_in_a_right_checksum_is_still_an_index_file_error() -> None:
    with _filled(6) as index:
        raw = index._saved()
    bad = [
        {"parts": [["art.seq", "<i8", 8]]},  # parts that do not fill the body
        {"parts": [["art.seq", "|O", 8]]},  # no object arrays
        {"compression": "lzma"},
        {"namespace": "no spaces here"},
        {"seq": "many"},
    ]
    for change in bad:
        with pytest.raises(IndexFileError, match="damaged"):
            Index._from_saved(_rewritten(raw, **change), "f", None)
    for policy in ({"no_such_setting": 1}, {"threshold": 2.0}, {"threshold": "high"}):
        with pytest.raises(IndexFileError, match="its policy does not read here"):
            Index._from_saved(_rewritten(raw, policy=policy), "f", None)


# A sequence of operations: add a text of the pool under an id (an int or its str), or remove an
# id; then where to save and load, and how.
_IDS = st.integers(0, 14)
_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), _IDS, st.integers(0, len(POOL) - 1), st.booleans()),
        st.tuples(st.just("remove"), _IDS, st.just(0), st.booleans()),
    ),
    min_size=1,
    max_size=24,
)


def _apply(index: Index, op: tuple[str, int, int, bool]) -> object:
    kind, i, text, as_str = op
    doc_id: str | int = str(i) if as_str else i
    try:
        if kind == "remove":
            return index.remove(doc_id)
        return index.add(doc_id, POOL[text], source="wire")
    except NeardupError as exc:
        return (type(exc).__name__, str(exc))


@settings(max_examples=40)
@given(_OPS, st.data())
def test_verdicts_after_a_round_trip_are_those_without_one(
    tmp_path_factory: pytest.TempPathFactory, ops: list[Any], data: st.DataObject
) -> None:
    split = data.draw(st.integers(0, len(ops)), label="split")
    how = data.draw(st.sampled_from(["file", "compressed", "pickle"]), label="how")
    with Index() as never:
        expected = [_apply(never, op) for op in ops]
        with Index() as first:
            got = [_apply(first, op) for op in ops[:split]]
            if how == "pickle":
                kept = pickle.loads(pickle.dumps(first))
            else:
                path = tmp_path_factory.mktemp("saved") / "index"
                first.save(path, compress=how == "compressed")
                kept = Index.load(path)
        with kept:
            got += [_apply(kept, op) for op in ops[split:]]
            assert got == expected
            assert _state(kept) == _state(never)


def test_a_rebuilt_namespace_saves_what_it_reads(tmp_path: Path) -> None:
    with Index(namespace="news") as index:
        store: Any = index._engine.index
        index._run(store.set_alias("news", aliases.value("news.r2", Policy())))
        index.add("a", STORIES[0])
        index.save(tmp_path / "news")
    with Index.load(tmp_path / "news") as loaded:
        assert (loaded.namespace, list(loaded)) == ("news", ["a"])
        assert loaded.add("b", STORIES[0]).duplicate_of == "a"
