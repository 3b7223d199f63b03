"""The worker's HTTP side: the views, the read API and its models, the check page."""

__all__: list[str] = []
