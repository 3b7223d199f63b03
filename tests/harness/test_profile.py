"""The py-spy stack classifier: idle, the running callback's category, the threads."""

from __future__ import annotations

from harness.profile import IDLE, analyse_profile

LOOP = "<module> (neardup);run (asyncio/runners.py);_run_once (asyncio/base_events.py)"
RAW = "\n".join(
    [
        f"{LOOP};select (selectors.py);EpollSelector.select (selectors.py) 50",
        f"{LOOP};Handle._run (asyncio/events.py);prepare (stream/engine/prepare.py);"
        "minhash (sketch/minhash.py) 30",
        f"{LOOP};Handle._run (asyncio/events.py);send (aiokafka/producer/producer.py);"
        "debug (logging/__init__.py) 20",
        "ServiceThread._start_thread (mode/threads.py);EpollSelector.select (selectors.py) 9",
        "ServiceThread._start_thread (mode/threads.py);fetch (aiokafka/consumer/fetcher.py) 1",
    ]
)


def test_samples_are_classified_by_the_running_callback() -> None:
    got = analyse_profile(RAW)
    assert got["samples"] == 110
    assert got["main_samples"] == 100
    assert got["main_busy_pct"] == 50.0
    assert got["consumer_thread_busy_pct"] == 10.0
    cats = got["categories_pct_of_main"]
    assert cats[IDLE] == 50.0
    assert cats["logging"] == 20.0, "logging inside the producer counts as logging"
    assert cats["sketches (features, MinHash, SimHash, keys)"] == 30.0
