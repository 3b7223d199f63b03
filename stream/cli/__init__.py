"""The ``neardup`` command line: the app and its commands, and what they share."""

__all__: list[str] = []
