"""Developer scripts: local servers (services.py), the demo behind make run, the sample builder."""
