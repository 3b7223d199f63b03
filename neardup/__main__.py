"""``python -m neardup``: the ``neardup`` command line."""

from neardup.stream.cli.main import main

__all__: list[str] = []

if __name__ == "__main__":
    main()
