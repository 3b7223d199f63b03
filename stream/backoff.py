"""The one backoff of every retry loop: waits that double from ``first_s`` up to ``max_s``.

Exponential, so a short outage costs little and a long one does not hammer the server; capped, so
service resumes within ``max_s`` of the server coming back. No jitter: the retries are those of a
few workers against one server, not of a crowd of clients.
"""

from __future__ import annotations

from collections.abc import Iterator


def backoff(first_s: float, max_s: float) -> Iterator[float]:
    """``first_s, min(2 first_s, max_s), min(4 first_s, max_s), ...`` without end: the wait
    before each retry (a loop that gives up after ``n`` attempts takes ``n - 1`` of them)."""
    if first_s <= 0 or max_s <= 0:
        raise ValueError("backoff waits must be > 0")
    delay = first_s
    while True:
        yield delay
        delay = min(delay * 2, max_s)


__all__ = ["backoff"]
