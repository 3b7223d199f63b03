"""Sketch throughput, accuracy and size: neardup against datasketch and the PyPI ``simhash``.

Every pipeline runs on the same texts of one seeded corpus: a warm-up, then the best of ``--reps``
passes with gc off (as ``timeit`` does); one too slow for its budget runs on a prefix. Accuracy:
RMSE of each MinHash estimate against the exact Jaccard of the same word 3-shingle sets, on
mutation pairs topped up with random ones. datasketch tokenises the idiomatic way, per document
and with ``MinHash.bulk`` (the ratio is against the faster); the "precomputed" rows compare
sketching alone; the SimHash rows use each library's own default features.
"""

from __future__ import annotations

import gc
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from bench import cli, sketch_tables
from bench.readings import machine_info
from bench.sketch_tables import out as console
from harness.corpus import Doc, doc_shingles, exact_pairs, generate, jaccard, peer_shingles
from neardup.sketch.features import batch_shingle_hashes, shingle_counts, shingle_hashes
from neardup.sketch.minhash import MinHasher, Signature, estimate_jaccard_bbit, pack_bbit
from neardup.sketch.simhash import simhash

U64 = npt.NDArray[np.uint64]
F64 = npt.NDArray[np.float64]

NUM_PERM = 128
BATCH = 256
WARMUP_DOCS = 64
ROW_BUDGET_S = 12.0  # timed passes of one pipeline; slower ones run on a prefix of the corpus
BBITS = (32, 16, 8, 4)


@dataclass
class Row:
    group: str
    name: str
    docs: int
    best_s: float
    docs_per_s: float
    baseline: str
    ratio: float | None = None
    rmse: float | None = None
    rmse_similar: float | None = None


@dataclass
class SizeRow:
    sketch: str
    bytes_per_signature: int
    rmse: float
    rmse_similar: float
    bias: float


def _time(
    fn: Callable[[Sequence[Any]], Any], inputs: Sequence[Any], reps: int
) -> tuple[int, float]:
    """Best wall time of ``reps`` passes over ``inputs`` (a prefix if a pass would overrun)."""
    fn(inputs[:WARMUP_DOCS])
    start = time.perf_counter()
    fn(inputs[:WARMUP_DOCS])
    per_doc = (time.perf_counter() - start) / min(WARMUP_DOCS, len(inputs))
    n = len(inputs)
    if per_doc * n * reps > ROW_BUDGET_S:
        n = max(WARMUP_DOCS, int(ROW_BUDGET_S / (per_doc * reps)) // BATCH * BATCH)
    best = float("inf")
    for _ in range(reps):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            fn(inputs[:n])
            best = min(best, time.perf_counter() - start)
        finally:
            gc.enable()
    return n, best


def _matrix(result: Any) -> U64:
    """Signature values as an ``(n_docs, k)`` matrix, whatever the pipeline returned."""
    if isinstance(result, list) and result and isinstance(result[0], np.ndarray):
        return np.vstack(result).astype(np.uint64)
    if isinstance(result, list) and result and isinstance(result[0], Signature):
        return np.vstack([s.values for s in result])
    return np.vstack([np.asarray(m.hashvalues, dtype=np.uint64) for m in result])


def _pairs(docs: Sequence[Doc], n_pairs: int, rng: random.Random) -> list[tuple[int, int]]:
    """Mutation pairs (document, source) and (document, grandparent), then random pairs."""
    index = {d["id"]: i for i, d in enumerate(docs)}
    pairs: set[tuple[int, int]] = set()
    for i, d in enumerate(docs):
        src = d["source"]
        for _ in range(2):
            if src is None:
                break
            j = index[src]
            pairs.add((min(i, j), max(i, j)))
            src = docs[j]["source"]
    chosen = sorted(pairs)
    rng.shuffle(chosen)
    chosen = chosen[: n_pairs * 3 // 4]
    taken = set(chosen)
    while len(chosen) < n_pairs and len(docs) > 1:
        i, j = sorted(rng.sample(range(len(docs)), 2))
        if (i, j) not in taken:
            taken.add((i, j))
            chosen.append((i, j))
    return chosen


def _errors(est: F64, exact: F64) -> tuple[float, float, float]:
    """RMSE over all pairs, RMSE over pairs with exact J >= 0.1, mean bias."""
    err = est - exact
    similar = exact >= 0.1
    rmse_similar = float(np.sqrt(np.mean(err[similar] ** 2))) if similar.any() else float("nan")
    return float(np.sqrt(np.mean(err**2))), rmse_similar, float(np.mean(err))


def _estimates(matrix: U64, a: npt.NDArray[np.intp], b: npt.NDArray[np.intp]) -> F64:
    est: F64 = np.mean(matrix[a] == matrix[b], axis=1)
    return est


def run(n_docs: int, seed: int, reps: int, n_pairs: int) -> dict[str, Any]:
    from datasketch import LeanMinHash, MinHash
    from simhash import Simhash

    t_start = time.perf_counter()
    docs = generate(n_docs, seed=seed)
    texts = [d["text"] for d in docs]
    sets = doc_shingles(docs)
    oph, kperm = MinHasher(num_perm=NUM_PERM), MinHasher(num_perm=NUM_PERM, scheme="kperm")
    hash_bytes = [[int(x).to_bytes(8, "little") for x in h.tolist()] for h in sets]
    hash_ints = [(h & np.uint64(0xFFFFFFFF)).tolist() for h in sets]

    def ds_per_doc(texts: Sequence[str]) -> list[Any]:
        out = []
        for t in texts:
            m = MinHash(num_perm=NUM_PERM)
            m.update_batch(peer_shingles(t))
            out.append(m)
        return out

    def oph_batch(texts: Sequence[str]) -> list[U64]:
        return [
            oph.signatures(*batch_shingle_hashes(texts[i : i + BATCH]))
            for i in range(0, len(texts), BATCH)
        ]

    text, hashes = "minhash: text -> signature", "minhash: precomputed shingle hashes -> signature"
    fingerprint = "simhash: text -> 64-bit fingerprint"
    plan: list[tuple[str, str, Callable[[Sequence[Any]], Any], Sequence[Any]]] = [
        (
            text,
            "neardup oph, single doc",
            lambda ts: [oph.signature(shingle_hashes(t)) for t in ts],
            texts,
        ),
        (text, f"neardup oph, batch {BATCH} (engine)", oph_batch, texts),
        (
            text,
            "neardup kperm, single doc",
            lambda ts: [kperm.signature(shingle_hashes(t)) for t in ts],
            texts,
        ),
        (text, "datasketch, new MinHash per doc", ds_per_doc, texts),
        (
            text,
            "datasketch, MinHash.bulk",
            lambda ts: list(MinHash.bulk([peer_shingles(t) for t in ts], num_perm=NUM_PERM)),
            texts,
        ),
        (hashes, "neardup oph", lambda hs: [oph.signature(h) for h in hs], sets),
        (hashes, "neardup kperm", lambda hs: [kperm.signature(h) for h in hs], sets),
        (
            hashes,
            "datasketch bulk, 8-byte strings (sha1_hash32 re-hash)",
            lambda xs: list(MinHash.bulk(xs, num_perm=NUM_PERM)),
            hash_bytes,
        ),
        (
            hashes,
            "datasketch bulk, uint32 (identity hashfunc)",
            lambda xs: list(MinHash.bulk(xs, num_perm=NUM_PERM, hashfunc=lambda x: x)),
            hash_ints,
        ),
        (
            fingerprint,
            "neardup (tf-weighted)",
            lambda ts: [simhash(*shingle_counts(t)) for t in ts],
            texts,
        ),
        (fingerprint, "simhash (PyPI)", lambda ts: [int(Simhash(t).value) for t in ts], texts),
    ]

    rng = random.Random(seed)
    pairs = _pairs(docs, n_pairs, rng)
    a = np.array([i for i, _ in pairs], dtype=np.intp)
    b = np.array([j for _, j in pairs], dtype=np.intp)
    exact = np.array([jaccard(sets[i], sets[j]) for i, j in pairs])
    ds_sets = [peer_shingles(t) for t in texts]
    exact_ds = np.array(
        [len(ds_sets[i] & ds_sets[j]) / len(ds_sets[i] | ds_sets[j]) for i, j in pairs]
    )

    rows: list[Row] = []
    matrices: dict[str, U64] = {}
    for group, name, fn, inputs in plan:
        console.print(f"[dim]timing {name} ...")
        n, best = _time(fn, inputs, reps)
        row = Row(group, name, n, best, n / best, baseline="")
        if group.startswith("minhash"):
            matrix = _matrix(fn(inputs))
            matrices[f"{group}|{name}"] = matrix
            truth = exact_ds if name.startswith("datasketch") else exact
            row.rmse, row.rmse_similar, _ = _errors(_estimates(matrix, a, b), truth)
        rows.append(row)

    for row in rows:
        # Baseline of a group: its fastest datasketch row, or PyPI simhash for SimHash.
        base_rows = [
            r for r in rows if r.group == row.group and r.name.startswith(("datasketch", "simhash"))
        ]
        if base_rows:
            base = max(base_rows, key=lambda r: r.docs_per_s)
            row.baseline = base.name
            row.ratio = row.docs_per_s / base.docs_per_s

    # Size against accuracy: full signatures, b-bit packed, datasketch LeanMinHash.
    oph_m = matrices["minhash: text -> signature|neardup oph, single doc"]
    batch_m = matrices[f"minhash: text -> signature|neardup oph, batch {BATCH} (engine)"]
    batch_equals_single = bool(np.array_equal(oph_m, batch_m))
    if not batch_equals_single:
        console.print("[red]warning: the batch path's signatures differ from the single-doc path")
    kperm_m = matrices["minhash: text -> signature|neardup kperm, single doc"]
    ds_m = matrices["minhash: text -> signature|datasketch, MinHash.bulk"]
    sig0 = Signature(oph_m[0], "oph", oph.seed, NUM_PERM)
    sizes: list[SizeRow] = []
    for label, matrix, truth in (
        ("neardup oph, 64-bit values", oph_m, exact),
        ("neardup kperm, 64-bit values", kperm_m, exact),
    ):
        sizes.append(
            SizeRow(
                f"{label} (Signature.to_bytes)",
                len(sig0.to_bytes()),
                *_errors(_estimates(matrix, a, b), truth),
            )
        )
    sig_of = {i: Signature(oph_m[i], "oph", oph.seed, NUM_PERM) for i in {*a.tolist(), *b.tolist()}}
    for bits in BBITS:
        packed = {i: pack_bbit(s, bits) for i, s in sig_of.items()}
        est = np.array(
            [estimate_jaccard_bbit(packed[i], packed[j], bits, NUM_PERM) for i, j in pairs]
        )
        sizes.append(
            SizeRow(
                f"neardup oph, b={bits} (pack_bbit)", len(packed[pairs[0][0]]), *_errors(est, exact)
            )
        )
    lean = LeanMinHash(MinHash(num_perm=NUM_PERM))
    buf = bytearray(lean.bytesize())
    lean.serialize(buf)
    sizes.append(
        SizeRow(
            f"datasketch {lean.scheme} (LeanMinHash.serialize)",
            len(buf),
            *_errors(_estimates(ds_m, a, b), exact_ds),
        )
    )

    ground = exact_pairs(docs, 0.5)
    return {
        "benchmark": "sketch",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine_info(("numpy", "mmh3", "datasketch", "simhash")),
        "corpus": {
            "generator": "harness.corpus.generate",
            "lang": "en",
            "docs": n_docs,
            "seed": seed,
            "words": 300,
            "dup_rate": 0.3,
            "mean_shingles_per_doc": float(np.mean([len(s) for s in sets])),
            "pairs_jaccard_ge_0.5": len(ground),
        },
        "method": {
            "num_perm": NUM_PERM,
            "batch": BATCH,
            "reps": reps,
            "timing": "best of reps after a warm-up, gc disabled, time.perf_counter",
            "batch_equals_single": batch_equals_single,
            "accuracy_pairs": len(pairs),
            "accuracy_pairs_similar": int(np.count_nonzero(exact >= 0.1)),
            "max_abs_diff_exact_neardup_vs_datasketch_shingles": float(
                np.max(np.abs(exact - exact_ds))
            ),
        },
        "speed": [asdict(r) for r in rows],
        "size": [asdict(s) for s in sizes],
        "elapsed_s": time.perf_counter() - t_start,
    }


def main(argv: list[str] | None = None) -> int:
    parser = cli.parser("sketch", __doc__, seed=7)
    parser.add_argument("--docs", type=int, default=2000, help="corpus size (default 2000)")
    parser.add_argument("--reps", type=int, default=3, help="timed passes per pipeline (best kept)")
    parser.add_argument("--pairs", type=int, default=2000, help="pairs for accuracy (default 2000)")
    args = parser.parse_args(argv)
    result = run(args.docs, args.seed, args.reps, args.pairs)
    sketch_tables.print_tables(result)
    cli.write(args.out, "sketch", result, sketch_tables.markdown(result))
    console.print(f"wrote {args.out / 'sketch.json'} and {args.out / 'sketch.md'}")
    return 0
