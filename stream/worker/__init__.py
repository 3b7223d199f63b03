"""The streaming worker: the faust app, its batch handler, settings, clients, metrics, logs."""

__all__: list[str] = []
