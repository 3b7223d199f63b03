"""Index stores: the protocol (:mod:`~neardup.stream.index.base`), memory and Redis
implementations."""

__all__: list[str] = []
