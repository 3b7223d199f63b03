"""Deciding articles: a batch prepared, registered and probed, verified, judged; rebuilds."""

__all__: list[str] = []
