"""Prometheus parsing, /proc readings and tables: what every benchmark report is built from."""

from __future__ import annotations

import os
from pathlib import Path

from harness.report import cpu_seconds, md_table, parse_prometheus, rss_mb, write_atomic

EXPOSITION = """\
# HELP neardup_articles_in_total Articles read.
# TYPE neardup_articles_in_total counter
neardup_articles_in_total{namespace="a"} 3.0
neardup_articles_in_total{namespace="b",lang="en"} 4.0
neardup_articles_in_created{namespace="a"} 1.7e9
neardup_batch_seconds_bucket{le="0.1"} 2.0
neardup_batch_seconds_bucket{le="+Inf"} 5.0
neardup_batch_seconds_sum 0.75
neardup_batch_seconds_count 5.0
neardup_up 1 1700000000000
garbage line without a value
neardup_weird NaN-ish
"""


def test_prometheus_samples_are_summed_over_labels_without_buckets() -> None:
    got = parse_prometheus(EXPOSITION)
    assert got["neardup_articles_in_total"] == 7.0
    assert got["neardup_batch_seconds_sum"] == 0.75
    assert got["neardup_batch_seconds_count"] == 5.0
    assert got["neardup_up"] == 1.0, "a timestamp after the value is not the value"
    assert not any(k.endswith("_bucket") for k in got)
    assert "neardup_weird" not in got and "garbage" not in got


def test_prometheus_empty_scrape_is_empty() -> None:
    assert parse_prometheus("") == {}


def test_own_process_readings_are_positive() -> None:
    cpu = cpu_seconds(os.getpid())
    rss = rss_mb(os.getpid())
    assert cpu is not None and cpu >= 0
    assert rss is not None and rss > 1
    assert cpu_seconds(None) is None and rss_mb(None) is None


def test_md_table_right_aligns_all_but_the_first_column() -> None:
    assert md_table(["a", "b", "c"], [["x", "1", "2"]]).splitlines() == [
        "| a | b | c |",
        "|---|---:|---:|",
        "| x | 1 | 2 |",
    ]


def test_write_atomic_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "r.md"
    write_atomic(target, "one")
    write_atomic(target, "two")
    assert target.read_text() == "two"
    assert [p.name for p in tmp_path.iterdir()] == ["r.md"]
