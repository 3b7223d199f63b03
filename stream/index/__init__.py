"""Index stores: the protocol (:mod:`~stream.index.base`), memory and Redis implementations."""

__all__: list[str] = []
