"""The originality check page: ``GET /`` and its assets under ``GET /static/{name}``.

The page (``stream/static/``, shipped as package data) is plain HTML, CSS and a little
JavaScript that calls the worker's own JSON API (``POST /check``, ``GET /articles/{id}``,
``GET /clusters/{id}``) from the browser, so it needs no build step and loads nothing from
elsewhere. The files are read once when the views are registered; a request can only name one
of them (an allowlist, not a path), so nothing outside the directory is reachable.
"""

from __future__ import annotations

from importlib import resources

import faust
from faust.web import Request, Response, View

#: Content types by suffix; a file with another suffix is not served.
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".txt": "text/plain; charset=utf-8",
}

#: The page talks to its own origin only: a pasted text can never pull in a script.
POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

INDEX = "index.html"


def static_files() -> dict[str, tuple[bytes, str]]:
    """The servable files of ``stream/static``: name -> (content, content type)."""
    out: dict[str, tuple[bytes, str]] = {}
    for entry in resources.files("neardup.stream.worker.http").joinpath("static").iterdir():
        name = entry.name
        suffix = name[name.rfind(".") :] if "." in name else ""
        kind = CONTENT_TYPES.get(suffix.lower())
        if kind is not None and entry.is_file() and not name.startswith("."):
            out[name] = (entry.read_bytes(), kind)
    return out


def _headers(content_type: str) -> dict[str, str]:
    """The header rather than ``content_type=``: aiohttp refuses a charset in that argument."""
    return {
        "Content-Type": content_type,
        "Content-Security-Policy": POLICY,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-cache",
    }


def add_page(app: faust.App) -> None:
    """Serve the page at ``/`` and its assets at ``/static/{name}`` (404 for any other name)."""
    files = static_files()
    if INDEX not in files:
        raise RuntimeError(f"stream/static/{INDEX} is missing from the installed package")

    class Page(View):
        async def get(self, request: Request) -> Response:
            body, kind = files[INDEX]
            return self.bytes(body, headers=_headers(kind))

    class Static(View):
        async def get(self, request: Request, name: str) -> Response:
            found = files.get(name)
            if found is None:
                return self.json({"error": "not_found", "detail": "no such asset"}, status=404)
            body, kind = found
            return self.bytes(body, headers=_headers(kind))

    app.page("/")(Page)
    app.page("/static/{name}")(Static)


__all__ = ["CONTENT_TYPES", "add_page", "static_files"]
