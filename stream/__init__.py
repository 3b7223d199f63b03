"""The neardup service: index, engine, CLI and streaming worker around ``sketch``.

Import from the module that owns a name (``stream.model.Verdict``, ``stream.engine.Engine``):
the package re-exports nothing, so ``import stream`` does not import faust or redis.
"""

__all__: list[str] = []
