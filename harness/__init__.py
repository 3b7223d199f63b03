"""Development harness: local servers, worker processes, corpora with their truth, reports.

Dev-only and never installed with the product: nothing in ``sketch`` or ``stream`` imports it,
and it imports neither ``bench`` nor ``tests``.
"""
