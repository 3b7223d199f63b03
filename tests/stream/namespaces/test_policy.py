"""Policy: documented defaults, validation, the recall floor, and what belongs to the scheme."""

from __future__ import annotations

import dataclasses

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from neardup.sketch.lsh import candidate_probability, recall_floor_params
from neardup.stream.namespaces.policy import BUCKET_SALTS, BucketSalts, Policy


def test_defaults() -> None:
    p = Policy()
    assert (p.threshold, p.measure, p.recall) == (0.8, "jaccard", 0.99)
    assert (p.shingle_size, p.num_perm) == (3, 128)
    assert p.candidate_jaccard == 0.8


def test_default_banding_is_the_recall_floor_choice() -> None:
    p = Policy()
    bands, rows = p.bands_rows
    assert bands * rows <= p.num_perm
    assert candidate_probability(0.8, bands, rows) >= 0.99
    assert (bands, rows) == recall_floor_params(0.8, 0.99, 128)
    # not the S-curve midpoint: the midpoint parameters (9, 13) find a pair at 0.8 only ~40%
    assert (bands, rows) != (9, 13)


@given(st.floats(0.3, 0.97), st.sampled_from([0.9, 0.95, 0.99]))
def test_banding_meets_recall_for_any_threshold(t: float, recall: float) -> None:
    p = Policy(threshold=t, recall=recall)
    bands, rows = p.bands_rows
    assert bands * rows <= p.num_perm
    assert candidate_probability(t, bands, rows) >= recall


@pytest.mark.parametrize(
    "kwargs",
    [
        {"threshold": 0.0},
        {"threshold": -0.1},
        {"threshold": 1.01},
        {"short_threshold": 0.0},
        {"short_threshold": 1.5},
        {"recall": 0.0},
        {"recall": 1.0},
        {"measure": "cosine"},
        {"bucket_cap": 0},
        {"max_matches": 0},
        {"short_tokens": -1},
    ],
)
def test_invalid_settings_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        Policy(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"num_perm": 0},
        {"shingle_size": 0},
        {"char_ngram": 0},
        {"simhash_k": 5},  # needs k < blocks (pigeonhole)
        {"simhash_blocks": 2},
        {"minhash_scheme": "xx"},
        {"retention_s": -5.0},
        {"measure": "containment", "max_size_ratio": 0.1},
        {"measure": "containment", "max_size_ratio": -1.0},
    ],
)
def test_invalid_scheme_settings_fail_at_construction(kwargs: dict[str, object]) -> None:
    """A frozen settings object is validated when it is built (worker start), not on the first
    article, and never silently accepted (``shingle_size=0`` currently runs)."""
    with pytest.raises(ValueError):
        Policy(**kwargs)  # type: ignore[arg-type]


def test_threshold_one_is_usable() -> None:
    """Validation accepts threshold 1.0 ("(0, 1]"), so a Policy built with it must work:
    the engine calls ``scheme_bytes()`` (which needs ``bands_rows``) on first use."""
    p = Policy(threshold=1.0)
    bands, rows = p.bands_rows
    assert candidate_probability(1.0, bands, rows) >= p.recall
    assert p.scheme_bytes()


def test_scheme_bytes_are_canonical_json() -> None:
    p = Policy()
    scheme = orjson.loads(p.scheme_bytes())
    assert scheme["bands"] == list(p.bands_rows)
    assert scheme["seed"] == p.seed
    assert p.scheme_bytes() == Policy().scheme_bytes()
    assert len(p.scheme_id()) == 16


@pytest.mark.parametrize(
    "change",
    [
        {"num_perm": 256},
        {"seed": 1},
        {"shingle_size": 4},
        {"char_ngram": 2},
        {"minhash_scheme": "kperm"},
        {"simhash_k": 2},
        {"simhash_blocks": 6},
        {"short_tokens": 20},
        {"measure": "containment"},
        {"recall": 0.9},
        {"threshold": 0.6},
        {"short_threshold": 0.6},
    ],
)
def test_scheme_changes_with_scheme_parameters(change: dict[str, object]) -> None:
    assert Policy(**change).scheme_bytes() != Policy().scheme_bytes()  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "change",
    [{"max_matches": 3}, {"bucket_cap": 5}, {"retention_s": 3600.0}],
)
def test_scheme_ignores_settings_that_do_not_touch_stored_data(change: dict[str, object]) -> None:
    assert Policy(**change).scheme_bytes() == Policy().scheme_bytes()  # type: ignore[arg-type]


@given(st.floats(0.5, 0.97), st.floats(0.5, 0.97))
def test_threshold_enters_the_scheme_only_through_banding(t1: float, t2: float) -> None:
    """Buckets depend on the threshold only via (bands, rows): equal banding, equal scheme."""
    a, b = Policy(threshold=t1), Policy(threshold=t2)
    assert (a.scheme_bytes() == b.scheme_bytes()) == (a.bands_rows == b.bands_rows)


@given(st.floats(0.2, 1.0), st.floats(1.0, 4.0))
def test_containment_candidate_jaccard(c: float, ratio: float) -> None:
    p = Policy(measure="containment", threshold=c, max_size_ratio=ratio)
    assert p.candidate_jaccard == pytest.approx(c / (1.0 + ratio - c))
    # the bound is tight: A inside B with |B| = ratio |A| and containment c gives that Jaccard
    a = 1000
    inter = c * a
    union = a + ratio * a - inter
    assert inter / union == pytest.approx(p.candidate_jaccard)


def test_containment_bands_for_the_lower_jaccard() -> None:
    p = Policy(measure="containment", threshold=0.25)
    assert p.candidate_jaccard == pytest.approx(0.25 / 4.75)
    bands, rows = p.bands_rows
    assert candidate_probability(p.candidate_jaccard, bands, rows) >= 0.99


def test_policy_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Policy().threshold = 0.5  # type: ignore[misc]


def test_bucket_salts_are_part_of_the_scheme() -> None:
    """The salts decide every bucket id, so the index must refuse a worker with other ones."""
    scheme = orjson.loads(Policy().scheme_bytes())
    assert scheme["format"] == 7
    assert scheme["anchors"] == {"k": 4, "tokens": 8}
    assert scheme["passages"] == {"k": 4, "tokens": 8, "span": 16}
    assert scheme["bucket_salts"] == {
        "long_band": 0x4C4F4E4742414E44,
        "short_band": 0x53484F5254424E44,
        "simhash_table": 0x53494D5441424C45,
        "table_mult": 0xC2B2AE3D27D4EB4F,
        "anchor": 0x414E43484F525321,
        "passage": 0x5041535341474553,
    }
    other = dataclasses.replace(BUCKET_SALTS, short_band=1)
    assert Policy(bucket_salts=other).scheme_bytes() != Policy().scheme_bytes()


@pytest.mark.parametrize("change", [{"table_mult": 2}, {"long_band": -1}, {"simhash_table": 2**64}])
def test_invalid_bucket_salts_are_refused(change: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        BucketSalts(**change)


def test_deleted_ids_are_remembered_for_the_window_or_deleted_ttl() -> None:
    """A deleted id is remembered as long as the namespace keeps articles, else a week."""
    assert Policy().remember_deleted_s == 7 * 86400.0
    assert Policy(deleted_ttl_s=60.0).remember_deleted_s == 60.0
    assert Policy(retention_s=3600.0, deleted_ttl_s=60.0).remember_deleted_s == 3600.0
    with pytest.raises(ValueError, match="deleted_ttl_s"):
        Policy(deleted_ttl_s=0)
    # how long deletions are remembered decides no stored key: not part of the scheme
    assert Policy(deleted_ttl_s=60.0).scheme_bytes() == Policy().scheme_bytes()
