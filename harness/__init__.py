"""Development harness: local servers, worker processes, corpora with their truth, reports.

Dev-only and never installed with the product (``pyproject.toml`` packages only ``sketch`` and
``stream``): the tests, the benchmarks and ``make run`` stand on it; nothing in ``sketch`` or
``stream`` imports it.
"""
