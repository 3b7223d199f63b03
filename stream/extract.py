"""A whole web page read as its main content: the story, without the navigation, footers, "most
read" boxes and comments a site prints around it (message ``format: "page"``).

The extraction is trafilatura's, the extractor web-corpus pipelines use; it is an optional extra
(``pip install 'neardup[html]'``: lxml and its friends), so a worker without it refuses a page
with a clear reason instead of reading it otherwise. A page trafilatura finds no main content in
is read as its visible text (:func:`neardup.sketch.markup.html_text`).
"""

from __future__ import annotations

from functools import cache
from importlib.util import find_spec
from typing import Any

from neardup.sketch.markup import html_text
from neardup.stream import extras

INSTALL_HINT = "pip install 'neardup[html]'"


@cache
def available() -> bool:
    """Whether the extractor is installed."""
    return find_spec("trafilatura") is not None


@cache
def _extractor() -> Any:
    return extras.load("trafilatura", "html", "reading a page's main content").extract


def main_content(page: str) -> str:
    """The page's main content as text, a paragraph a line; its visible text when trafilatura
    finds none. Raises :class:`~neardup.stream.extras.MissingExtra` (``html``) when the
    extractor is not installed."""
    found = _extractor()(page, include_comments=False, include_tables=True, deduplicate=False)
    if found and found.strip():
        return str(found)
    shown = html_text(page)
    return shown if shown.strip() else page


__all__ = ["INSTALL_HINT", "available", "main_content"]
