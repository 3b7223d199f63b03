"""The peer systems the benchmarks measure neardup against.

- :mod:`bench.peers.datasketch_runs`: datasketch ``MinHashLSH`` fed in this process (memory and
  Redis storage), for the engine and quality benchmarks.
- ``datasketch_dedup.py``: a whole program as a user writes it from datasketch's documentation,
  run as a script by the command benchmark.
"""
