"""The neardup service around ``neardup.sketch``, in layers that import only downwards:

- the floor, here: errors, the data model, input validation, compact records, backoff;
- ``index/``: the index contract, in memory and in Redis (``index/redis/``);
- ``namespaces/``: a namespace's policy and scheme, the policies file, aliases;
- ``engine/``: preparing a batch, deciding it (engine, judge, boilerplate), rebuilding;
- ``worker/``: the faust worker, its batch handler and clients, and its HTTP side (``http/``);
- ``cli/``: the ``neardup`` command line.

Import from the module that owns a name (``neardup.stream.model.Verdict``): the package
re-exports nothing, so ``import neardup.stream`` does not import faust or redis.
"""

__all__: list[str] = []
