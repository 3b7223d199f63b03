"""Pure similarity-sketch algorithms: numpy + mmh3, no I/O, no asyncio, no global state.

The names here are what a user of the library needs, from a text to its candidates and their
verification (a datasketch user finds MinHash, LSH and its parameters under the same names):

* :func:`normalize`: the canonical form of a text, whitespace folded: what every sketch reads.
* :func:`shingle_hashes`: a text's sorted, unique uint64 shingle hashes: the set sketched.
* :class:`MinHasher`: makes MinHash signatures of shingle hashes (one scheme, seed and size).
* :class:`Signature`: a MinHash signature with the scheme, seed and size that made it.
* :class:`SchemeMismatch`: raised when signatures of two schemes are compared.
* :func:`estimate_jaccard`: the Jaccard similarity two signatures estimate.
* :func:`optimal_params`: datasketch's (bands, rows) for a threshold.
* :func:`recall_floor_params`: the cheapest (bands, rows) that finds pairs at a similarity.
* :func:`candidate_probability`: the LSH S-curve, the chance a pair becomes a candidate.
* :func:`band_keys`: a signature's LSH bucket keys, for any key-value store.
* :func:`simhash_one`: a text's 64-bit SimHash fingerprint from its shingle hashes.
* :func:`hamming_many`: Hamming distances from one fingerprint to many.
* :class:`HammingIndex`: every stored fingerprint within k bits of a query, without a scan.
* :func:`design`: the permuted tables for k-bit queries over a number of fingerprints.
* :func:`table_keys`: a fingerprint's keys in those tables, for any key-value store.
* :func:`jaccard`: the exact Jaccard similarity of two shingle sets (verification).
* :func:`containment`: how much of one shingle set another holds (a passage copied whole).
* :func:`edit_similarity`: the normalised edit similarity of two short texts.

Everything else (the canonical form's steps, batches of texts, facts, boilerplate lines,
evidence) is importable from its own module, ``neardup.sketch.<module>``; the weighted
``simhash.simhash`` and ``simhash.hamming`` stay qualified by their module, whose name they
share. A test pins this list.
"""

from neardup.sketch.features import normalize, shingle_hashes
from neardup.sketch.hamming import HammingIndex, design, table_keys
from neardup.sketch.lsh import band_keys, candidate_probability, optimal_params, recall_floor_params
from neardup.sketch.minhash import MinHasher, SchemeMismatch, Signature, estimate_jaccard
from neardup.sketch.simhash import hamming_many, simhash_one
from neardup.sketch.verify import containment, edit_similarity, jaccard

__all__ = [
    "HammingIndex",
    "MinHasher",
    "SchemeMismatch",
    "Signature",
    "band_keys",
    "candidate_probability",
    "containment",
    "design",
    "edit_similarity",
    "estimate_jaccard",
    "hamming_many",
    "jaccard",
    "normalize",
    "optimal_params",
    "recall_floor_params",
    "shingle_hashes",
    "simhash_one",
    "table_keys",
]
