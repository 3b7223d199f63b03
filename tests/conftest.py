"""Shared test configuration. No servers here: unit tests stay service-free.

Hypothesis profiles: ``ci`` (default) has no deadline, because shared CI machines make
per-example timings meaningless; ``dev`` keeps Hypothesis' defaults. Pick one with
``HYPOTHESIS_PROFILE=dev``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
