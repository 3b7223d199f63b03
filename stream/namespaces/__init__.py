"""Namespaces: the similarity policy and scheme of one, the policies file, and aliases."""

__all__: list[str] = []
