"""A memory index's namespace saved to a file, and read back: what ``neardup.Index.save`` writes.

Never pickle: loading a file reads data and runs nothing it holds. One file holds one namespace
(an ``Index`` serves one) with everything its verdicts depend on: articles, verdicts, content
slots, buckets, deletions remembered, boilerplate line counts and clusters; and the policy the
index ran under. Layout::

    magic    8 bytes     b"\\x89NDIDX\\r\\n"
    length   8 bytes     the header's length, unsigned little-endian
    header   JSON        {"format": "neardup-memory-index", "version": 1, "namespace": ...,
                          "scheme": the scheme the namespace was built with, as
                          Index.ensure_scheme compares it (null: nothing was added),
                          "policy": the Policy's fields, "seq", "cap", "decisions",
                          "parts": [[name, dtype, length], ...],
                          "compression": "none" or "zlib", "body": the body's length as
                          stored}
    body     the parts, one after another in the header's order (zlib-compressed as a whole
             when ``compression`` says so)
    checksum 16 bytes    BLAKE2b-128 of every byte before it

The frame (magic, header length, a JSON header saying ``body``, body, checksum) is every
version's: a file is checked whole before its version is read.

A part is a blob (dtype ``bytes``) or a column of little-endian numbers (``<i8``, ``<u8``,
``<f8``). A list of byte strings is two parts: ``NAME.len`` (their lengths) and ``NAME.blob``
(them, joined). The parts: ``art.*`` the articles by seq (``seq``, ``id``, ``record``, ``at``);
``verdict.*`` (``seq``, ``blob``); ``deleted.*`` (``id``, ``at``); ``exact.*`` the content slots
(``key``, ``n`` copies each, ``seq`` flat); ``bucket.*`` (``id``, ``seq``, by bucket id, each
bucket's earliest first); ``lines0.*`` and ``lines1.*`` the two generations of line counts
(``key``, ``count``); ``member.*`` the copies of each cluster (``cluster``, ``seq``, ``at``).

A file of another format version, or that is not one, cut short or damaged, is refused with
:class:`~neardup.stream.errors.IndexFileError` saying which; the scheme is compared by the
caller, as a store compares it (:func:`~neardup.stream.index.base.scheme_mismatch`).
"""

from __future__ import annotations

import hashlib
import os
import stat
import struct
import tempfile
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence, Sized
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from neardup.stream import names
from neardup.stream.errors import IndexFileError
from neardup.stream.index.columns import Buckets, Slot, seqs_of
from neardup.stream.index.memory import Space
from neardup.stream.index.seq_times import SeqTimes

MAGIC = b"\x89NDIDX\r\n"
FORMAT = "neardup-memory-index"
VERSION = 1
_LENGTH = struct.Struct("<Q")
_DTYPES = {"<i8", "<u8", "<f8"}  # the only columns a file may hold (no object arrays)
_MAX_HEADER = 1 << 26  # a header past 64 MB is not one this module wrote
_DIGEST = 16  # the file's last bytes: BLAKE2b-128 of all before them


@dataclass(frozen=True, slots=True)
class Header:
    """What a file says of itself, read before its body (a refusal costs no parsing)."""

    version: int
    namespace: str
    scheme: bytes | None
    policy: dict[str, Any]  # the Policy's fields (neardup.stream.namespaces.policies.as_json)
    meta: Mapping[str, Any]  # the whole header as read


def dump(
    space: Space, namespace: str, policy: Mapping[str, Any], *, compress: bool = False
) -> bytes:
    """The file's bytes for one namespace's state and the policy it runs under (its fields as
    JSON: :func:`neardup.stream.namespaces.policies.as_json`)."""
    parts = _parts(space)
    body = b"".join(_raw(v) for v in parts.values())
    if compress:
        body = zlib.compress(body, 1)
    header = {
        "format": FORMAT,
        "version": VERSION,
        "namespace": namespace,
        "scheme": space.scheme.decode() if space.scheme is not None else None,
        "policy": dict(policy),
        "seq": space.seq,
        "cap": space.cap,
        "decisions": space.decisions.decode() if space.decisions is not None else None,
        "parts": [[k, _dtype(v), len(_raw(v))] for k, v in parts.items()],
        "compression": "zlib" if compress else "none",
        "body": len(body),
    }
    head = orjson.dumps(header)
    framed = b"".join((MAGIC, _LENGTH.pack(len(head)), head, body))
    return framed + _digest(framed)


def write(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all: a temporary file beside it, renamed.
    A file replaced keeps its permissions; a new one is its owner's only (the texts are)."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        if target.exists():
            os.chmod(tmp, stat.S_IMODE(target.stat().st_mode))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_header(data: bytes, where: str) -> tuple[Header, memoryview]:
    """The file's header and its body as stored, checked whole (the frame every version
    keeps: magic, header length, header, body, checksum); :class:`IndexFileError` for a file
    that is not a saved index, cut short, damaged, or of another format version."""
    if not data or not MAGIC.startswith(data[: len(MAGIC)]):
        raise IndexFileError(f"{where}: not a saved neardup index (no {FORMAT} header)")
    start = len(MAGIC) + _LENGTH.size
    if len(data) < start:
        raise _cut(where, len(data), start)
    (n,) = _LENGTH.unpack_from(data, len(MAGIC))
    if n > _MAX_HEADER:
        raise IndexFileError(f"{where}: damaged: it says its header has {n:,} bytes")
    if len(data) < start + n:
        raise _cut(where, len(data), start + n)
    view = memoryview(data)
    try:
        meta = orjson.loads(view[start : start + n])
        size = int(meta["body"])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise IndexFileError(f"{where}: damaged: its header does not read ({exc})") from None
    end = start + n + size
    if len(data) < end + _DIGEST:
        raise _cut(where, len(data), end + _DIGEST)
    if len(data) > end + _DIGEST:
        raise IndexFileError(f"{where}: damaged: {len(data) - end - _DIGEST:,} bytes past its end")
    if _digest(view[:end]) != data[end:]:
        raise IndexFileError(f"{where}: damaged: its bytes do not match their checksum")
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise IndexFileError(f"{where}: not a saved neardup index (no {FORMAT} header)")
    version = meta.get("version")
    if version != VERSION:
        raise IndexFileError(
            f"{where}: a {FORMAT} of file format version {version}; this neardup reads version "
            f"{VERSION} only: load it with a neardup that reads version {version}, or build the "
            "index again from its texts"
        )
    try:
        namespace = names.check_namespace(str(meta["namespace"]))
        scheme = meta["scheme"]
        header = Header(
            version,
            namespace,
            None if scheme is None else str(scheme).encode(),
            dict(meta["policy"]),
            meta,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise IndexFileError(f"{where}: damaged: its header does not read ({exc!r})") from None
    return header, view[start + n : end]


def load(header: Header, body: memoryview, where: str) -> Space:
    """The namespace's state the body holds (:func:`read_header` checked it whole);
    :class:`IndexFileError` if it does not read as the header says."""
    meta = header.meta
    try:
        compression, listed = meta["compression"], meta["parts"]
        raw = _inflate(body, compression, sum(int(p[2]) for p in listed))
        parts = _split(raw, listed)
        return _space(parts, meta)
    except (KeyError, TypeError, ValueError, IndexError, zlib.error) as exc:
        raise IndexFileError(f"{where}: damaged: its body does not read ({exc})") from None


def _digest(data: bytes | memoryview) -> bytes:
    return hashlib.blake2b(data, digest_size=_DIGEST).digest()


def _cut(where: str, got: int, want: int, what: str = "the file") -> IndexFileError:
    return IndexFileError(f"{where}: cut short: {what} has {got:,} of its {want:,} bytes")


def _inflate(body: memoryview, compression: object, size: int) -> bytes:
    if compression == "none":
        return bytes(body)
    if compression != "zlib":
        raise ValueError(f"unknown compression {compression!r}")
    out = zlib.decompressobj().decompress(body, size + 1)  # never more than the parts listed
    if len(out) != size:
        raise ValueError(f"{len(out):,} bytes where the parts make {size:,}")
    return out


Part = bytes | npt.NDArray[Any]


def _raw(value: Part) -> bytes:
    return value if isinstance(value, bytes) else value.tobytes()


def _dtype(value: Part) -> str:
    return "bytes" if isinstance(value, bytes) else str(value.dtype.str)


def _split(raw: bytes, listed: Sequence[Sequence[Any]]) -> dict[str, Part]:
    """The parts the header lists, cut out of the body."""
    out: dict[str, Part] = {}
    at = 0
    for name, dtype, length in listed:
        n = int(length)
        if n < 0 or at + n > len(raw):
            raise ValueError(f"part {name!r} runs past the body")
        chunk = raw[at : at + n]
        at += n
        if dtype == "bytes":
            out[str(name)] = chunk
        elif dtype in _DTYPES:
            out[str(name)] = np.frombuffer(chunk, dtype=dtype)
        else:
            raise ValueError(f"part {name!r} has dtype {dtype!r}")
    if at != len(raw):
        raise ValueError("parts do not fill the body")
    return out


def _strings(items: Iterable[bytes], name: str) -> dict[str, Part]:
    """A list of byte strings as two parts: their lengths and them joined."""
    items = list(items)
    return {
        f"{name}.len": np.array([len(x) for x in items], dtype="<i8"),
        f"{name}.blob": b"".join(items),
    }


def _unstrings(parts: Mapping[str, Part], name: str) -> list[bytes]:
    lengths, blob = _column(parts, f"{name}.len"), parts[f"{name}.blob"]
    if not isinstance(blob, bytes) or (lengths < 0).any() or int(lengths.sum()) != len(blob):
        raise ValueError(f"part {name!r}: lengths do not match its bytes")
    ends = np.cumsum(lengths).tolist()
    starts = [0, *ends][:-1]
    return [blob[a:b] for a, b in zip(starts, ends, strict=True)]


def _column(parts: Mapping[str, Part], name: str) -> npt.NDArray[Any]:
    got = parts[name]
    if isinstance(got, bytes):
        raise ValueError(f"part {name!r} is not a column")
    return got


def _col(values: Iterable[float] | Iterable[int], dtype: str) -> npt.NDArray[Any]:
    return np.fromiter(values, dtype=dtype)


def _parts(space: Space) -> dict[str, Part]:
    """The namespace's state as named parts (see the module doc)."""
    seqs = list(space.ids.values())
    parts: dict[str, Part] = {"art.seq": _col(seqs, "<i8")}
    parts |= _strings((d.encode() for d in space.ids), "art.id")
    parts |= _strings((space.docs[s] for s in seqs), "art.record")
    parts["art.at"] = _col((space.times[s] for s in seqs), "<f8")
    verdicts = space.all_verdicts()
    parts["verdict.seq"] = _col(verdicts, "<i8")
    parts |= _strings(verdicts.values(), "verdict.blob")
    parts |= _strings((d.encode() for d in space.deleted), "deleted.id")
    parts["deleted.at"] = _col(space.deleted.values(), "<f8")
    parts |= _strings(space.exact, "exact.key")
    slots = [seqs_of(slot) for slot in space.exact.values()]
    parts["exact.n"] = _col((len(s) for s in slots), "<i8")
    parts["exact.seq"] = _col((x for s in slots for x in s), "<i8")
    ids, bucket_seqs = space.buckets.entries()
    parts["bucket.id"], parts["bucket.seq"] = ids.astype("<u8"), bucket_seqs.astype("<i8")
    for i, gen in enumerate(space.lines):
        parts |= _strings(gen, f"lines{i}.key")
        parts[f"lines{i}.count"] = _col(gen.values(), "<i8")
    copies = [(c, s, at) for c, got in space.members.items() for s, at in got.items()]
    parts |= _strings((c.encode() for c, _, _ in copies), "member.cluster")
    parts["member.seq"] = _col((s for _, s, _ in copies), "<i8")
    parts["member.at"] = _col((at for _, _, at in copies), "<f8")
    return parts


def _same_length(*columns: Sized) -> None:
    if len({len(c) for c in columns}) > 1:
        raise ValueError("columns of one table differ in length")


def _space(parts: Mapping[str, Part], meta: Mapping[str, Any]) -> Space:
    """The namespace's state from its parts (the inverse of :func:`_parts`)."""
    scheme, decisions = meta["scheme"], meta["decisions"]
    space = Space(
        scheme=None if scheme is None else str(scheme).encode(),
        seq=int(meta["seq"]),
        cap=int(meta["cap"]),
        decisions=None if decisions is None else str(decisions).encode(),
        name=str(meta["namespace"]),
    )
    seqs = _column(parts, "art.seq").tolist()
    ids = [x.decode() for x in _unstrings(parts, "art.id")]
    records = _unstrings(parts, "art.record")
    times = _column(parts, "art.at").tolist()
    _same_length(seqs, ids, records, times)
    space.ids = dict(zip(ids, seqs, strict=True))
    space.docs = dict(zip(seqs, records, strict=True))
    space.times = SeqTimes(zip(seqs, times, strict=True))
    verdict_seqs = _column(parts, "verdict.seq").tolist()
    space.load_verdicts(dict(zip(verdict_seqs, _unstrings(parts, "verdict.blob"), strict=True)))
    deleted = [x.decode() for x in _unstrings(parts, "deleted.id")]
    space.deleted = dict(zip(deleted, _column(parts, "deleted.at").tolist(), strict=True))
    space.exact = _slots(
        _unstrings(parts, "exact.key"), _column(parts, "exact.n"), _column(parts, "exact.seq")
    )
    space.buckets = Buckets.of_entries(
        _column(parts, "bucket.id").astype(np.uint64), _column(parts, "bucket.seq")
    )
    space.lines = [_counts(parts, f"lines{i}") for i in (0, 1)]
    clusters = [x.decode() for x in _unstrings(parts, "member.cluster")]
    member_seqs = _column(parts, "member.seq").tolist()
    ats = _column(parts, "member.at").tolist()
    _same_length(clusters, member_seqs, ats)
    for cluster, seq, at in zip(clusters, member_seqs, ats, strict=True):
        space.members.setdefault(cluster, {})[seq] = at
        space.cluster_of[seq] = cluster
    return space


def _counts(parts: Mapping[str, Part], name: str) -> Counter[bytes]:
    keys, counts = _unstrings(parts, f"{name}.key"), _column(parts, f"{name}.count").tolist()
    return Counter(dict(zip(keys, counts, strict=True)))


def _slots(
    keys: list[bytes], counts: npt.NDArray[Any], flat: npt.NDArray[Any]
) -> dict[bytes, Slot]:
    """Content slots: each key's copies, one seq as an int, more packed (as the index keeps
    them)."""
    _same_length(keys, counts)
    if (counts < 1).any() or int(counts.sum()) != len(flat):
        raise ValueError("content slots do not match their copies")
    out: dict[bytes, Slot] = {}
    at = 0
    native = flat.astype(np.int64)  # packed slots are native int64 (columns.with_seq)
    for key, n in zip(keys, counts.tolist(), strict=True):
        out[key] = int(native[at]) if n == 1 else native[at : at + n].tobytes()
        at += n
    return out


__all__ = ["FORMAT", "MAGIC", "VERSION", "Header", "dump", "load", "read_header", "write"]
