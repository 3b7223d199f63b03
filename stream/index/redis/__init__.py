"""The Redis index: the index itself, the keys it writes, its clients and its Lua functions."""

__all__: list[str] = []
