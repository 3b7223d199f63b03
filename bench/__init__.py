"""Reproducible benchmarks: ``python -m bench [NAME ...]``; results go to ``bench/results/``."""
