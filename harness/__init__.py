"""Development harness: local servers, worker processes, corpora with their truth, reports.

Dev-only and never installed with the product (``pyproject.toml`` packages only ``sketch`` and
``stream``): the tests, the benchmarks and ``make run`` stand on it; nothing in ``sketch`` or
``stream`` imports it, and it imports neither ``bench`` nor ``tests``.

- servers: ``services`` (Redis, the Tansu broker, ``free_port``; a CLI), ``probes`` (through
  redis-py and librdkafka)
- workers and Kafka: ``workers`` (the one ``NEARDUP_*`` environment), ``kafka`` (topics,
  producing, reading verdicts)
- text and truth: ``data``, ``corpus``, ``golden``, ``sample`` and the generators of briefs,
  pages, disguises and poisoning
- reports: ``report`` (Markdown tables, result files, Prometheus samples, a process's CPU and
  memory), ``profile``
- ``demo``: ``make run``

What only the benchmarks use (their stack, peers, scoring, charts, machine readings) lives in
``bench/``.
"""
