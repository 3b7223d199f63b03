"""Development harness: local servers, worker processes, corpora with their truth, reports.

Dev-only and never installed with the product (``pyproject.toml`` packages only ``sketch`` and
``stream``): the tests, the benchmarks and ``make run`` stand on it; nothing in ``sketch`` or
``stream`` imports it, and it imports neither ``bench`` nor ``tests``.

- servers: ``services`` (Redis, the Tansu broker, ``free_port``; a CLI), ``probes``
- workers and Kafka: ``workers`` (the one ``NEARDUP_*`` environment), ``kafka`` (topics,
  producing, reading verdicts), ``rig`` (the streaming benchmarks' stack and readings)
- text and truth: ``data``, ``corpus``, ``passes``, ``quality``, ``peers``, ``golden``, ``sample``
- reports: ``report`` (machine, git, tables, /proc, Prometheus, timing), ``svg``, ``profile``
- ``demo``: ``make run``
"""
