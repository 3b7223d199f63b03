"""The neardup service: index, engine, CLI and streaming worker around ``sketch``."""
